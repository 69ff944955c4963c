#!/usr/bin/env python3
"""netsim exec client: aiohttp (https://docs.aiohttp.org), `--client aiohttp` (docs/drivers.md).

ONE aiohttp.ClientSession (one TCPConnector, one connection pool) on one asyncio loop for the
process; each request is a task on it, answered in completion order. aiohttp's defaults are kept
(aiohttp/client.py: DEFAULT_TIMEOUT = ClientTimeout(total=300, sock_connect=30); connector.py:
limit=100, limit_per_host=0 (no per-host limit), keepalive_timeout=15 s) and config maps by the
protocol's rules:

    timeout          -> ClientTimeout(total=timeout): aiohttp has a total timeout (the whole
                        request, redirects and its own retry included)
    connect_timeout  -> ClientTimeout(sock_connect=...) (null: aiohttp's 30 s)
    pool             -> TCPConnector(limit_per_host=pool): aiohttp's only per-host count; it
                        caps connections in use at once (a further request waits for one), the
                        idle ones are kept up to keepalive_timeout
    retries          -> aiohttp has no retry count. It replays an idempotent request ONCE by
                        itself when sending it fails with ClientOSError or
                        ServerDisconnectedError (client.py, `retry_persistent_connection`,
                        RFC 9112 9.3.1); that switch is private (`_retry_connection`), so it
                        stays on and the field is only logged

local_port: each attempt's connection, noted as aiohttp sends the request on it (a ClientRequest
subclass, given as ClientSession(request_class=...), aiohttp's own extension point), so a failed
attempt reports its connection too.

Errors, from aiohttp's exception classes (aiohttp/client_exceptions.py) and the OSError each wraps:

    ClientConnectorDNSError                                       -> dns
    ClientConnectorCertificateError, ClientSSLError, ssl.SSLError -> tls
    ClientConnectorError with errno ECONNREFUSED                  -> refused
    asyncio.TimeoutError (ServerTimeoutError, the total timeout)  -> timeout
    ServerDisconnectedError before the response head              -> closed-before-response
    ClientOSError/ConnectionResetError, ECONNRESET or EPIPE       -> reset
    ClientPayloadError (body cut short), a bad status line        -> other
"""

import asyncio
import contextvars
import errno
import ssl
import sys
import threading

import aiohttp

import time

from exec_protocol import (emit, exception_chain, hello, log_unknown_settings, logger, new_answer, read_config,
                           request_body, requests_from_stdin, set_error, set_response)

log = logger("aiohttp_client")
_attempt = contextvars.ContextVar("attempt")  # per request task: {"port": local port of its latest attempt}


class PortNotingRequest(aiohttp.ClientRequest):
    """aiohttp's request, noting the local port of the connection each attempt is sent on."""

    async def send(self, conn):
        sockname = conn.transport.get_extra_info("sockname") if conn.transport is not None else None
        attempt = _attempt.get(None)
        if attempt is not None and sockname:
            attempt["port"] = sockname[1]
        return await super().send(conn)


def make_session(config):
    """The session and connector, with aiohttp's defaults except what config sets. Runs on the loop."""
    timeout_kwargs = {"total": 300, "sock_connect": 30}  # aiohttp's DEFAULT_TIMEOUT
    if config.get("timeout") is not None:
        timeout_kwargs["total"] = float(config["timeout"])
    if config.get("connect_timeout") is not None:
        timeout_kwargs["sock_connect"] = float(config["connect_timeout"])
    connector_kwargs = {}
    if config.get("pool") is not None:
        connector_kwargs["limit_per_host"] = int(config["pool"])
    if config.get("retries") is not None:
        log(f"retries={config['retries']}: aiohttp has no retry count; its one replay of an idempotent "
            "request on a failed connection stays on (client.py retry_persistent_connection)")
    log_unknown_settings(config, (), log)
    timeout = aiohttp.ClientTimeout(**timeout_kwargs)
    log(f"ClientSession(timeout={timeout}, TCPConnector({connector_kwargs}))")
    # SSL_CERT_FILE names netsim's CA in a TLS scenario; ssl's default context reads it.
    return aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(**connector_kwargs),
                                 request_class=PortNotingRequest)


def error_kind(exc, answered):
    chain = exception_chain(exc, links=("os_error", "_os_error", "certificate_error"))

    def has(*types):
        return any(isinstance(e, types) for e in chain)

    def errno_is(*codes):
        return any(isinstance(e, OSError) and e.errno in codes for e in chain)

    if has(aiohttp.ClientConnectorDNSError):
        return "dns"
    if has(aiohttp.ClientConnectorCertificateError, aiohttp.ClientSSLError, ssl.SSLError):
        return "tls"
    if has(ConnectionRefusedError) or errno_is(errno.ECONNREFUSED):
        return "refused"
    if has(asyncio.TimeoutError, TimeoutError):
        return "timeout"
    if has(aiohttp.ServerDisconnectedError) and not answered:
        return "closed-before-response"
    if has(ConnectionResetError, BrokenPipeError) or errno_is(errno.ECONNRESET, errno.EPIPE):
        return "reset"
    return "other"


def _headers(response):
    """The response's headers as received, repeated ones apart (set_response joins them)."""
    return [(name.decode("latin-1"), value.decode("latin-1")) for name, value in response.raw_headers]


async def perform(session, request):
    answer = new_answer(request)
    answered = False
    attempt = {"port": None}
    _attempt.set(attempt)  # this task's own context: concurrent requests don't share it
    try:
        async with session.request(request.get("method", "GET"), request["url"], headers=request.get("headers") or {},
                                   data=request_body(request)) as response:
            answered = True
            data = await response.read()
        set_response(answer, response.status, _headers(response), data)
    except Exception as exc:  # noqa: BLE001 -- every failure becomes an answer
        set_error(answer, exc, lambda e: error_kind(e, answered), log)
    answer["local_port"] = attempt["port"]
    return answer


async def serve(config):
    session = make_session(config)  # built before hello: start-up is not scenario time
    hello("aiohttp", aiohttp.__version__)
    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    tasks = set()

    async def answer(request, received):
        result = await perform(session, request)
        result["elapsed"] = round(time.monotonic() - received, 6)
        emit(result)

    def read():  # stdin on a thread: the loop stays free for the requests
        for request, received in requests_from_stdin(log):
            loop.call_soon_threadsafe(lambda r=request, t=received: tasks.add(loop.create_task(answer(r, t))))
        loop.call_soon_threadsafe(done.set)

    threading.Thread(target=read, daemon=True).start()
    await done.wait()
    while tasks:
        pending = [t for t in tasks if not t.done()]
        if not pending:
            break
        await asyncio.wait(pending)
    await session.close()


def main():
    config = read_config(log)
    asyncio.run(serve(config))
    return 0


if __name__ == "__main__":
    sys.exit(main())
