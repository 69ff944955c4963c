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

httpcore swallows an error while it writes the request and goes on to read the answer (a
server may answer and close early). When a reset lands before the write, the write takes the
ECONNRESET and the read then sees only the end of the stream: "Server disconnected without
sending a response". The swallowed error is still reported to the request's `trace`
extension, so the adapter listens there and calls that case a reset, which it was.
"""

import ssl
import sys

import httpcore
import httpx

from exec_protocol import (exception_chain, hello, log_unknown_settings, logger, new_answer, read_config,
                           request_body, serve_threaded, set_error, set_response)

log = logger("httpx_client")


def make_client(config):
    timeout = config.get("timeout")
    connect = config.get("connect_timeout")
    timeouts = httpx.Timeout(timeout if timeout is not None else 5.0,
                             connect=connect if connect is not None else (timeout if timeout is not None else 5.0))
    # httpx's default limits (100 connections, 20 kept alive, 5 s keepalive_expiry) but `pool` kept.
    limits = httpx.Limits(max_connections=100, max_keepalive_connections=20 if config.get("pool") is None else int(config["pool"]))
    transport = httpx.HTTPTransport(retries=int(config.get("retries") or 0), limits=limits)
    log_unknown_settings(config, (), log)
    log(f"Client(timeout={timeouts}, limits={limits}, retries={config.get('retries') or 0})")
    return httpx.Client(timeout=timeouts, transport=transport, follow_redirects=False)


def error_kind(exc, swallowed=()):
    """The protocol's kind for `exc`; `swallowed` holds the write errors httpcore traced and
    suppressed on the way (see the module's doc)."""
    chain = exception_chain(exc, links=())

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
        written = " ".join(str(e) for w in swallowed for e in exception_chain(w, links=()))
        if "Connection reset by peer" in written or "Broken pipe" in written:
            return "reset"
        return "closed-before-response"
    if has(ConnectionResetError, BrokenPipeError) or "Connection reset by peer" in text or "Broken pipe" in text:
        return "reset"
    return "other"


def perform(client, request):
    answer = new_answer(request)
    swallowed = []

    def trace(event, info):
        # "http11.send_request_headers.failed", "http11.send_request_body.failed": a write error
        # httpcore is about to suppress.
        if event.startswith("http11.send_request") and event.endswith(".failed"):
            swallowed.append(info.get("exception"))

    try:
        with client.stream(request.get("method", "GET"), request["url"],
                           headers=request.get("headers") or {}, content=request_body(request),
                           extensions={"trace": trace}) as response:
            # The port while the connection is open: a server's close after the body ends it.
            stream = response.extensions.get("network_stream")
            address = stream.get_extra_info("client_addr") if stream is not None else None
            answer["local_port"] = address[1] if address else None
            data = response.read()
        set_response(answer, response.status_code, response.headers.multi_items(), data)
    except Exception as exc:  # noqa: BLE001 -- every failure becomes an answer
        set_error(answer, exc, lambda e: error_kind(e, swallowed), log, swallowed[-1] if swallowed else None)
    return answer


def main():
    config = read_config(log)
    client = make_client(config)  # built before hello: start-up is not scenario time
    hello("httpx", f"{httpx.__version__} (httpcore {httpcore.__version__})")
    serve_threaded(lambda request, received: perform(client, request),
                   max(16, int(config.get("pool") or 0)), log)
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
