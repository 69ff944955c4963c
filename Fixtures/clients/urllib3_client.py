#!/usr/bin/env python3
"""netsim exec driver: the urllib3 reference client (a test instrument, see docs/drivers.md).

The scenario runner starts this once per run, writes JSON lines to its stdin (one `config`, then
`request` lines) and reads one JSON answer line per request from its stdout. It behaves like an
application using urllib3: ONE PoolManager for the whole process, so pooled keep-alive
connections persist from one request to the next -- which is exactly what the scenarios probe
(a pooled connection that went stale while the phone was locked, and whether urllib3 recovers).

    config   timeout          -> read timeout, and connect timeout when connect_timeout is null
             connect_timeout  -> connect timeout
             pool             -> PoolManager(maxsize=pool)
             retries          -> Retry(total=retries, raise_on_redirect=False)
             (null: urllib3's own default for each)
             settings         -> optional: {"block": bool, "backoff_factor": float, "verify": bool}

Requests run concurrently on a thread pool and are answered in completion order. Errors are
mapped to the protocol's kinds (refused, reset, closed-before-response, timeout, tls, dns,
other) with urllib3's own message. `local_port` is the client-side port of the connection that
carried the last attempt, noted by a connection subclass whenever a connection is opened or used.
Logs (including urllib3's retry and pool warnings) go to stderr; stdout carries only protocol lines.
"""

import http.client
import logging
import sys
import threading

import urllib3
from urllib3 import connection, connectionpool, exceptions

from exec_protocol import (exception_chain, flag_setting, hello, log_unknown_settings, logger, new_answer,
                           read_config, request_body, serve_threaded, set_error, set_response)

log = logger("urllib3_client")
_attempt = threading.local()  # .port: local port of the current request's latest attempt


# --- local_port: remember the socket each attempt uses ------------------------------------------

def note_attempt_start():
    """Forgets the port and write error of this thread's previous request (requests_client
    uses it too)."""
    _attempt.port = None
    _attempt.write_error = None


def attempt_port():
    """The local port of this thread's latest attempt, or None."""
    return getattr(_attempt, "port", None)


def attempt_write_error():
    """The error writing the request of this thread's latest attempt, or None.

    urllib3 swallows ECONNRESET and EPIPE while it sends a request (a server may answer and
    close early) and reads the response: when a reset landed before the write, that read sees
    only the end of the stream, RemoteDisconnected. This keeps the swallowed error so the kind
    is the reset it was."""
    return getattr(_attempt, "write_error", None)


class _PortNoting:
    """Mixin for urllib3 connections: notes the local port on connect and on every use, so a
    reused pooled connection is reported as well as a fresh one (even if the attempt fails)."""

    def _note_port(self):
        try:
            if self.sock is not None:
                _attempt.port = self.sock.getsockname()[1]
        except OSError:
            pass  # socket already closed: keep the port noted when it was still open

    def connect(self):
        _attempt.write_error = None
        _attempt.port = None  # a connect that fails has no connection: not the previous attempt's
        super().connect()
        self._note_port()

    def request(self, *args, **kwargs):
        _attempt.write_error = None
        self._note_port()  # a reused connection: already connected
        try:
            return super().request(*args, **kwargs)
        except OSError as error:
            _attempt.write_error = error
            raise

    def getresponse(self, *args, **kwargs):
        self._note_port()
        return super().getresponse(*args, **kwargs)


# Named like urllib3's own classes so error messages read exactly as an application's would.
class HTTPConnection(_PortNoting, connection.HTTPConnection):
    pass


class HTTPSConnection(_PortNoting, connection.HTTPSConnection):
    pass


class HTTPConnectionPool(connectionpool.HTTPConnectionPool):
    ConnectionCls = HTTPConnection


class HTTPSConnectionPool(connectionpool.HTTPSConnectionPool):
    ConnectionCls = HTTPSConnection


# --- configuration ---------------------------------------------------------------------------

def make_pool_manager(config):
    settings = config.get("settings") or {}
    kwargs = {}
    if config.get("pool") is not None:
        kwargs["maxsize"] = int(config["pool"])
    if flag_setting(settings, "block") is not None:
        kwargs["block"] = flag_setting(settings, "block")
    if flag_setting(settings, "verify") is False:
        kwargs["cert_reqs"] = "CERT_NONE"
        urllib3.disable_warnings(exceptions.InsecureRequestWarning)
    if config.get("retries") is not None:
        retry_kwargs = {"total": int(config["retries"]), "raise_on_redirect": False}
        if settings.get("backoff_factor") is not None:
            retry_kwargs["backoff_factor"] = float(settings["backoff_factor"])
        kwargs["retries"] = urllib3.Retry(**retry_kwargs)
    timeout, connect_timeout = config.get("timeout"), config.get("connect_timeout")
    if timeout is not None or connect_timeout is not None:
        # As urllib3 does with a plain number, the request timeout also bounds the connect.
        kwargs["timeout"] = urllib3.Timeout(
            connect=connect_timeout if connect_timeout is not None else timeout, read=timeout)
    log_unknown_settings(config, {"block", "backoff_factor", "verify"}, log)
    manager = urllib3.PoolManager(**kwargs)
    manager.pool_classes_by_scheme = {"http": HTTPConnectionPool, "https": HTTPSConnectionPool}
    log(f"PoolManager({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})")
    return manager


# --- errors ----------------------------------------------------------------------------------

def error_kind(exc):
    chain = exception_chain(exc)

    def has(*types):
        return any(isinstance(e, types) for e in chain)

    if has(exceptions.NameResolutionError):
        return "dns"
    if has(exceptions.SSLError):
        return "tls"
    if has(ConnectionRefusedError):
        return "refused"
    # RemoteDisconnected is a ConnectionResetError too: an orderly close before any response,
    # unless writing the request met a reset (attempt_write_error says why that is hidden).
    if has(http.client.RemoteDisconnected):
        return "reset" if isinstance(attempt_write_error(), (ConnectionResetError, BrokenPipeError)) else "closed-before-response"
    if has(ConnectionResetError, BrokenPipeError):
        return "reset"
    if has(exceptions.ReadTimeoutError, exceptions.ConnectTimeoutError, TimeoutError) and not has(exceptions.NewConnectionError):
        return "timeout"
    # A status line that is not HTTP (garbage) is a protocol violation, not a close.
    if has(http.client.BadStatusLine):
        return "other"
    if any(isinstance(e, exceptions.ProtocolError) and "Connection aborted" in str(e) for e in chain):
        return "closed-before-response"
    return "other"


# --- requests --------------------------------------------------------------------------------

def perform(manager, request, received):
    """Runs one request (with urllib3's retries) and returns its answer."""
    note_attempt_start()
    answer = new_answer(request)
    try:
        response = manager.request(request.get("method", "GET"), request["url"],
                                   headers=request.get("headers") or {}, body=request_body(request))
        set_response(answer, response.status, response.headers.items(), response.data)
    except Exception as exc:  # noqa: BLE001 -- every failure becomes an answer
        set_error(answer, exc, error_kind, log, attempt_write_error())
    answer["local_port"] = attempt_port()
    return answer


def main():
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="urllib3_client: %(name)s: %(message)s")
    # Build the client from config *before* hello: scenario time starts at hello.
    config = read_config(log)
    manager = make_pool_manager(config)
    hello("urllib3", urllib3.__version__)
    serve_threaded(lambda request, received: perform(manager, request, received),
                   max(16, int(config.get("pool") or 0)), log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
