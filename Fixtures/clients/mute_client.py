#!/usr/bin/env python3
"""An exec client that says hello and then never answers (for netsim's driver-check tests):
driver-check must say so within its first request's deadline and stop, instead of waiting out
every check's deadline (it ran for minutes)."""
import json
import sys

print(json.dumps({"type": "hello", "name": "mute", "version": "0", "protocol": 1}), flush=True)
for _ in sys.stdin:
    pass
