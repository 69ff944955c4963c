#!/usr/bin/env python3
"""An exec client that crashes on every request but the first check's (for netsim's driver-check
tests): netsim answers a crashed client's requests itself, with kind "other", and driver-check
must not count those as the client classifying a failure as "other"."""
import json
import sys

print(json.dumps({"type": "hello", "name": "crashing", "version": "0", "protocol": 1}), flush=True)
for line in sys.stdin:
    message = json.loads(line)
    if message.get("type") != "request":
        continue
    if ".invalid" not in message["url"]:
        sys.exit(70)  # crashes, as an unhandled exception would
    print(json.dumps({"id": message["id"], "status": None, "headers": {}, "body_sha256": None, "body_length": None,
                      "body": None, "error": {"kind": "dns", "message": "no such host"}, "local_port": None,
                      "elapsed": None}), flush=True)
