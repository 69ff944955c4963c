"""Fetches a netsim /metrics page and parses it with Prometheus's own text parser
(PyPI prometheus-client, text_string_to_metric_families), which rejects malformed exposition.

Usage: python parse_metrics.py URL
Prints the families as one JSON object: {name: {"type", "documentation", "samples": [[name, labels, value]]}}.
Exit status 1 (and the parser's complaint) when the page is not valid Prometheus text.
"""
import json
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

with urllib.request.urlopen(sys.argv[1], timeout=10) as response:
    content_type = response.headers.get("Content-Type", "")
    text = response.read().decode("utf-8")

try:
    families = {
        family.name: {
            "type": family.type,
            "documentation": family.documentation,
            "samples": [[s.name, s.labels, s.value] for s in family.samples],
        }
        for family in text_string_to_metric_families(text)
    }
except Exception as error:  # the parser raises ValueError (and others) on bad input
    print("not valid Prometheus text:", error, file=sys.stderr)
    print(text, file=sys.stderr)
    sys.exit(1)

print(json.dumps({"content_type": content_type, "families": families}))
