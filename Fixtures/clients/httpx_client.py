#!/usr/bin/env python3
"""netsim exec client: httpx (https://www.python-httpx.org), `--client httpx` (docs/drivers.md).

ONE httpx.Client for the process (one httpcore connection pool), requests on a thread pool
(httpx.Client is thread-safe). httpx's defaults are kept (keepalive_expiry 5 s, no retries of
requests, HTTP/1.1); config maps by the protocol's rules:

    timeout          -> httpx.Timeout(timeout): connect, read, write and pool each (httpx has
                        no total timeout; a trickling server or a slow body can take longer)
    connect_timeout  -> httpx.Timeout(connect=...)
    pool             -> httpx.Limits(max_keepalive_connections=pool), max_connections 100 as httpx's default
    retries          -> httpx.HTTPTransport(retries=...): httpx retries *connects* only
                        (ConnectError, ConnectTimeout); a failed request is never replayed

local_port comes from the response's network stream (httpcore's `client_addr`); a failed
request reports none.
"""

import hashlib
import json
import ssl
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpcore
import httpx

_out = threading.Lock()


def log(text):
    sys.stderr.write(f"httpx_client: {text}\n")
    sys.stderr.flush()


def emit(message):
    with _out:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def make_client(config):
    timeout = config.get("timeout")
    connect = config.get("connect_timeout")
    timeouts = httpx.Timeout(timeout if timeout is not None else 5.0,
                             connect=connect if connect is not None else (timeout if timeout is not None else 5.0))
    # httpx's default limits (100 connections, 20 kept alive, 5 s keepalive_expiry) but `pool` kept.
    limits = httpx.Limits(max_connections=100, max_keepalive_connections=20 if config.get("pool") is None else int(config["pool"]))
    transport = httpx.HTTPTransport(retries=int(config.get("retries") or 0), limits=limits)
    unknown = sorted((config.get("settings") or {}).keys())
    if unknown:
        log(f"ignoring unknown settings: {unknown}")
    log(f"Client(timeout={timeouts}, limits={limits}, retries={config.get('retries') or 0})")
    return httpx.Client(timeout=timeouts, transport=transport, follow_redirects=False)


def _chain(exc):
    seen, todo = [], [exc]
    while todo:
        e = todo.pop(0)
        if not isinstance(e, BaseException) or any(e is s for s in seen):
            continue
        seen.append(e)
        todo += [e.__cause__, e.__context__] + [a for a in getattr(e, "args", ()) if isinstance(a, BaseException)]
    return seen


def error_kind(exc):
    chain = _chain(exc)

    def has(*types):
        return any(isinstance(e, types) for e in chain)

    if has(httpx.TimeoutException, TimeoutError):
        return "timeout"
    if has(ssl.SSLError):
        return "tls"
    text = " ".join(str(e) for e in chain)
    if has(httpx.ConnectError) and ("Name or service not known" in text or "nodename nor servname" in text
                                     or "Temporary failure in name resolution" in text):
        return "dns"
    if has(ConnectionRefusedError) or (has(httpx.ConnectError) and "Connection refused" in text):
        return "refused"
    # httpcore's own text for a FIN before any byte of the response.
    if has(httpx.RemoteProtocolError) and "Server disconnected without sending a response" in text:
        return "closed-before-response"
    if has(ConnectionResetError, BrokenPipeError) or "Connection reset by peer" in text or "Broken pipe" in text:
        return "reset"
    return "other"


def perform(client, request):
    answer = {"id": request.get("id"), "status": None, "headers": {}, "body_sha256": None,
              "body_length": None, "body": None, "error": None, "local_port": None}
    started = time.monotonic()
    try:
        body = request.get("body")
        response = client.request(request.get("method", "GET"), request["url"],
                                  headers=request.get("headers") or {},
                                  content=body.encode("utf-8") if body is not None else None)
        data = response.content
        stream = response.extensions.get("network_stream")
        address = stream.get_extra_info("client_addr") if stream is not None else None
        answer.update(status=response.status_code,
                      headers={name.lower(): value for name, value in response.headers.items()},
                      body_sha256=hashlib.sha256(data).hexdigest(), body_length=len(data),
                      body=data[:65536].decode("utf-8", errors="replace"),
                      local_port=address[1] if address else None)
    except Exception as exc:  # noqa: BLE001 -- every failure becomes an answer
        try:
            kind = error_kind(exc)
        except Exception as bug:  # noqa: BLE001
            log(f"cannot classify {exc!r}: {bug!r}")
            kind = "other"
        answer["error"] = {"kind": kind, "message": f"{type(exc).__name__}: {exc}"}
        log(f"request {request.get('id')} failed: {kind}: {exc!r}")
    answer["elapsed"] = round(time.monotonic() - started, 6)
    emit(answer)


def main():
    line = sys.stdin.readline()
    try:
        config = json.loads(line) if line.strip() else {}
    except json.JSONDecodeError:
        config = {}
    if config.get("type") != "config":
        log("first line is not a config: using httpx's defaults")
        config = {}
    client = make_client(config)  # built before hello: start-up is not scenario time
    workers = ThreadPoolExecutor(max_workers=max(16, int(config.get("pool") or 0)))
    emit({"type": "hello", "name": "httpx", "version": f"{httpx.__version__} (httpcore {httpcore.__version__})", "protocol": 1})
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except json.JSONDecodeError as exc:
            log(f"not JSON, ignored: {line.strip()!r} ({exc})")
            continue
        if message.get("type") == "request":
            workers.submit(perform, client, message)
        else:
            log(f"unexpected line, ignored: {line.strip()!r}")
    workers.shutdown(wait=True)
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
