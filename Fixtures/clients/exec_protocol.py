"""Plumbing shared by netsim's Python exec clients (docs/drivers.md, exec protocol 1).

Every Python adapter in Fixtures/clients (urllib3, httpx, requests, aiohttp, curl through
pycurl) speaks the same lines: it reads `config` (already on stdin before hello), builds ONE
client from it, says hello, then answers each `request` line with one answer line, concurrently,
in completion order. This module holds that protocol part, so an adapter is only its library:
how config maps onto it, how a request is performed, and how its exceptions map to error kinds.
"""

import hashlib
import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

PROTOCOL = 1
BODY_TEXT_LIMIT = 65536
_out_lock = threading.Lock()


def emit(obj):
    """Writes one protocol line to stdout and flushes it at once (stdout carries nothing else)."""
    line = json.dumps(obj, separators=(",", ":"))
    with _out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def logger(name):
    """A function that writes `name: text` to stderr, the client's log."""
    def log(text):
        print(f"{name}: {text}", file=sys.stderr, flush=True)
    return log


def read_config(log):
    """The first line is `config` (netsim writes it before it waits for hello); {} when it is not."""
    line = sys.stdin.readline()
    try:
        message = json.loads(line) if line.strip() else {}
    except json.JSONDecodeError as exc:
        log(f"first line is not JSON ({exc}): using the library's defaults")
        return {}
    if not isinstance(message, dict) or message.get("type") != "config":
        log("first line is not a config: using the library's defaults")
        return {}
    return message


def log_unknown_settings(config, known, log):
    """Drivers ignore, and log, `settings` keys they don't know (a scenario may be written for another)."""
    unknown = sorted(set((config.get("settings") or {}).keys()) - set(known))
    if unknown:
        log(f"ignoring unknown settings: {unknown}")


def flag_setting(settings, key):
    """A yes/no `settings` value, which the exec protocol carries as text ("false"): True, False,
    or None when absent. `bool("false")` is True, and `"false" is False` never holds: read that
    way, `block: false` turned blocking on and `verify: false` did nothing (QA 62). A value that
    is neither is an error, not a silent default."""
    value = settings.get(key)
    if value is None:
        return None
    text = str(value).strip().lower()
    if text in ("true", "yes", "on", "1"):
        return True
    if text in ("false", "no", "off", "0"):
        return False
    raise ValueError(f"settings.{key}: {value!r} is neither true nor false")


def hello(name, version):
    emit({"type": "hello", "name": name, "version": version, "protocol": PROTOCOL})


def requests_from_stdin(log):
    """Yields each `request` message after hello with the monotonic time its line was read."""
    for line in sys.stdin:
        received = time.monotonic()
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except json.JSONDecodeError as exc:
            log(f"not JSON, ignored: {line.strip()!r} ({exc})")
            continue
        if isinstance(message, dict) and message.get("type") == "request":
            yield message, received
        else:
            log(f"unexpected line, ignored: {line.strip()!r}")


def new_answer(request):
    """An answer with every field null, for `request`."""
    return {"id": request.get("id"), "status": None, "headers": {}, "body_sha256": None,
            "body_length": None, "body": None, "error": None, "local_port": None, "elapsed": None}


def request_body(request):
    body = request.get("body")
    return body.encode("utf-8") if body is not None else None


def set_response(answer, status, headers, data):
    """Fills status, lower-cased headers (repeated ones joined with ", ") and the body fields."""
    joined = {}
    for name, value in headers:
        name = name.lower()
        joined[name] = f"{joined[name]}, {value}" if name in joined else value
    answer.update(status=status, headers=joined, body_sha256=hashlib.sha256(data).hexdigest(),
                  body_length=len(data), body=data[:BODY_TEXT_LIMIT].decode("utf-8", errors="replace"))


def set_error(answer, exc, classify, log, swallowed=None):
    """Fills `error` from an exception, classified by the adapter's `classify(exc) -> kind`.
    `swallowed`: an error the library suppressed on the way (writing the request) that the
    kind took into account; the message names it, so the reader sees why."""
    try:
        kind = classify(exc)
    except Exception as bug:  # noqa: BLE001 -- a classification bug must not lose the answer
        log(f"cannot classify {exc!r}: {bug!r}")
        kind = "other"
    message = f"{type(exc).__name__}: {exc}"
    if swallowed is not None:
        message += f" (writing the request met {type(swallowed).__name__}: {swallowed})"
    answer["error"] = {"kind": kind, "message": message}
    log(f"request {answer['id']} failed: {kind}: {exc}")


def exception_chain(exc, links=("reason",)):
    """The exception, what it wraps (attributes named in `links`, exception arguments) and its
    causes and contexts, each once: libraries wrap the socket error that tells the kind."""
    seen, todo = [], [exc]
    while todo:
        e = todo.pop(0)
        # Only exceptions: ssl.SSLError's `reason` is a string ("CERTIFICATE_VERIFY_FAILED").
        if not isinstance(e, BaseException) or any(e is s for s in seen):
            continue
        seen.append(e)
        todo += [getattr(e, link, None) for link in links] + [e.__cause__, e.__context__]
        todo += [a for a in getattr(e, "args", ()) if isinstance(a, BaseException)]
    return seen


def serve_threaded(perform, workers, log):
    """Answers requests on a thread pool of `workers` threads until stdin closes, then waits for
    the requests in flight. `perform(request, received)` returns the answer to emit."""
    pool = ThreadPoolExecutor(max_workers=workers)

    def run(request, received):
        answer = perform(request, received)
        answer["elapsed"] = round(time.monotonic() - received, 6)
        emit(answer)

    for request, received in requests_from_stdin(log):
        pool.submit(run, request, received)
    pool.shutdown(wait=True)
