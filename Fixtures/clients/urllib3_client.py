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

import hashlib
import http.client
import json
import logging
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import urllib3
from urllib3 import connection, connectionpool, exceptions

BODY_TEXT_LIMIT = 65536
_out_lock = threading.Lock()
_attempt = threading.local()  # .port: local port of the current request's latest attempt


def emit(obj):
    """Writes one protocol line to stdout and flushes it at once."""
    line = json.dumps(obj, separators=(",", ":"))
    with _out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def log(message):
    print(f"urllib3_client: {message}", file=sys.stderr, flush=True)


# --- local_port: remember the socket each attempt uses ------------------------------------------

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
        super().connect()
        self._note_port()

    def request(self, *args, **kwargs):
        self._note_port()  # a reused connection: already connected
        return super().request(*args, **kwargs)

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
    if settings.get("block") is not None:
        kwargs["block"] = bool(settings["block"])
    if settings.get("verify") is False:
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
    unknown = set(settings) - {"block", "backoff_factor", "verify"}
    if unknown:
        log(f"ignoring unknown settings: {sorted(unknown)}")
    manager = urllib3.PoolManager(**kwargs)
    manager.pool_classes_by_scheme = {"http": HTTPConnectionPool, "https": HTTPSConnectionPool}
    log(f"PoolManager({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})")
    return manager


# --- errors ----------------------------------------------------------------------------------

def _causes(exc):
    """The exception, what it wraps (MaxRetryError.reason, ProtocolError args) and its causes."""
    seen, todo = [], [exc]
    while todo:
        e = todo.pop(0)
        # Only exceptions: ssl.SSLError's `reason` is a string ("CERTIFICATE_VERIFY_FAILED").
        if not isinstance(e, BaseException) or any(e is s for s in seen):
            continue
        seen.append(e)
        todo += [getattr(e, "reason", None), e.__cause__, e.__context__]
        todo += [a for a in getattr(e, "args", ()) if isinstance(a, BaseException)]
    return seen


def error_kind(exc):
    chain = _causes(exc)

    def has(*types):
        return any(isinstance(e, types) for e in chain)

    if has(exceptions.NameResolutionError):
        return "dns"
    if has(exceptions.SSLError):
        return "tls"
    if has(ConnectionRefusedError):
        return "refused"
    # RemoteDisconnected is a ConnectionResetError too: an orderly close before any response.
    if has(http.client.RemoteDisconnected):
        return "closed-before-response"
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
    """Runs one request (with urllib3's retries) and prints its answer; `received` is when its
    line was read, so `elapsed` includes any wait for a free worker."""
    _attempt.port = None
    answer = {"id": request.get("id"), "status": None, "headers": {}, "body_sha256": None,
              "body_length": None, "body": None, "error": None, "local_port": None, "elapsed": None}
    try:
        body = request.get("body")
        response = manager.request(
            request.get("method", "GET"), request["url"], headers=request.get("headers") or {},
            body=body.encode("utf-8") if body is not None else None)
        data = response.data
        answer.update(
            status=response.status,
            headers={name.lower(): value for name, value in response.headers.items()},
            body_sha256=hashlib.sha256(data).hexdigest(),
            body_length=len(data),
            body=data[:BODY_TEXT_LIMIT].decode("utf-8", errors="replace"))
    except Exception as exc:  # noqa: BLE001 -- every failure becomes an answer
        try:
            kind = error_kind(exc)
        except Exception as bug:  # noqa: BLE001 -- a classification bug must not lose the answer
            log(f"cannot classify {exc!r}: {bug!r}")
            kind = "other"
        answer["error"] = {"kind": kind, "message": f"{type(exc).__name__}: {exc}"}
        log(f"request {request.get('id')} failed: {answer['error']['kind']}: {exc}")
    answer["local_port"] = getattr(_attempt, "port", None)
    answer["elapsed"] = round(time.monotonic() - received, 6)
    emit(answer)


def read_config():
    """The first line is `config` (docs/drivers.md: netsim writes it before it waits for hello)."""
    line = sys.stdin.readline()
    try:
        message = json.loads(line) if line.strip() else {}
    except json.JSONDecodeError as exc:
        log(f"first line is not JSON ({exc}): using urllib3's defaults")
        return {}
    if message.get("type") != "config":
        log("first line is not a config: using urllib3's defaults")
        return {}
    return message


def main():
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="urllib3_client: %(name)s: %(message)s")
    # Build the client from config *before* hello: scenario time starts at hello.
    config = read_config()
    manager = make_pool_manager(config)
    workers = ThreadPoolExecutor(max_workers=max(16, int(config.get("pool") or 0)))
    emit({"type": "hello", "name": "urllib3", "version": urllib3.__version__, "protocol": 1})
    for line in sys.stdin:
        received = time.monotonic()
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except json.JSONDecodeError as exc:
            log(f"not JSON, ignored: {line.strip()!r} ({exc})")
            continue
        if message.get("type") == "request":
            workers.submit(perform, manager, message, received)
        else:
            log(f"unexpected line, ignored: {line.strip()!r}")
    workers.shutdown(wait=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
