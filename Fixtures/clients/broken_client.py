#!/usr/bin/env python3
"""A deliberately WRONG exec client, for `netsim driver-check`'s own tests (docs/drivers.md).

It works -- requests go out over Python's http.client and answers come back -- but it breaks
the protocol the way hand-written clients do, so the check must name each mistake:
  - hello has no "protocol";
  - response header names keep the server's case;
  - every failure is reported as kind "other" (no classification);
  - requests are handled one at a time, in order (no concurrency);
  - local_port is off by one;
  - it exits with status 3 when stdin closes.
"""

import hashlib
import http.client
import json
import sys
import urllib.parse


def emit(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def perform(request, timeout):
    url = urllib.parse.urlsplit(request["url"])
    answer = {"id": request["id"], "status": None, "headers": {}, "body_sha256": None,
              "body_length": None, "body": None, "error": None, "local_port": None}
    try:
        connection_type = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
        connection = connection_type(url.hostname, url.port, timeout=timeout)
        path = url.path + ("?" + url.query if url.query else "")
        body = request.get("body")
        connection.request(request["method"], path or "/", body=body.encode() if body is not None else None,
                           headers=request.get("headers") or {})
        answer["local_port"] = connection.sock.getsockname()[1] + 1
        response = connection.getresponse()
        data = response.read()
        answer.update(status=response.status, headers=dict(response.getheaders()),
                      body_sha256=hashlib.sha256(data).hexdigest(), body_length=len(data),
                      body=data[:65536].decode("utf-8", errors="replace"))
        connection.close()
    except Exception as exc:  # noqa: BLE001
        answer["error"] = {"kind": "other", "message": f"{type(exc).__name__}: {exc}"}
    emit(answer)


def main():
    config = json.loads(sys.stdin.readline() or "{}")
    emit({"type": "hello", "name": "broken", "version": "0"})
    for line in sys.stdin:
        if line.strip():
            message = json.loads(line)
            if message.get("type") == "request":
                perform(message, config.get("timeout") or 30)
    return 3


if __name__ == "__main__":
    sys.exit(main())
