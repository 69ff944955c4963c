#!/usr/bin/env python3
"""netsim exec client: libcurl through pycurl (http://pycurl.io), `--client curl` (docs/drivers.md).

Why pycurl and not the curl CLI: a CLI process per request starts with an empty connection
cache, so no pooled connection could ever go stale -- the very thing the scenarios probe. Here
ONE process keeps libcurl's connection cache across requests, as an application does: one
multi handle (CurlMulti, libcurl's own way to run transfers concurrently, as `curl --parallel`
does) drives every request on one thread, and its connection cache serves them all, so a
connection opened by one request is reused by the next. (A CurlShare of connections between
per-thread easy handles hung transfers under driver-check's concurrent requests, so not that.)

libcurl's defaults are kept: no total timeout (CURLOPT_TIMEOUT 0), a 300 s connect timeout,
connections idle up to 118 s are reused (CURLOPT_MAXAGE_CONN), no redirects followed, no
retries of its own but one kind: a request on a reused connection that turns out dead before any
response byte is resent, whatever its method, on the next connection -- which may be another
pooled one (lib/transfer.c Curl_retry_request, "Connection died, retrying a fresh connect"; it
cannot be switched off; lockscreen-post shows a POST sent 3 times). Config maps by the protocol's rules:

    timeout          -> CURLOPT_TIMEOUT_MS: libcurl's total timeout for the whole transfer
    connect_timeout  -> CURLOPT_CONNECTTIMEOUT_MS
    pool             -> CURLMOPT_MAXCONNECTS: the size of the multi handle's connection cache
    retries          -> libcurl has no retry count (the CLI's --retry is the tool's, not the
                        library's): logged; the resend on a dead reused connection stays

The CA: libcurl reads no environment variable for it (the curl tool does), so the client sets
CURLOPT_CAINFO from CURL_CA_BUNDLE (netsim names its CA there in a TLS scenario), as an
application configured with a CA file would; verification stays on.

local_port is CURLINFO_LOCAL_PORT, the port of the transfer's last connection, for failed
transfers too (0 or -1 -- no connection -- is reported as null).

Errors are pycurl.error(code, message) with libcurl's CURLcode:

    CURLE_COULDNT_CONNECT (7) with OS errno ECONNREFUSED       -> refused
    CURLE_RECV_ERROR (56) / CURLE_SEND_ERROR (55), ECONNRESET/EPIPE -> reset
    CURLE_GOT_NOTHING (52) "Empty reply from server"           -> closed-before-response
    CURLE_OPERATION_TIMEDOUT (28)                              -> timeout
    CURLE_SSL_CONNECT_ERROR (35) with OS errno ECONNRESET/EPIPE -> reset (an RST to the ClientHello)
    CURLE_PEER_FAILED_VERIFICATION (60), CURLE_SSL_CONNECT_ERROR (35),
    CURLE_SSL_CERTPROBLEM (58), CURLE_SSL_CACERT_BADFILE (77)  -> tls
    CURLE_COULDNT_RESOLVE_HOST (6)                              -> dns
    CURLE_PARTIAL_FILE (18), CURLE_WEIRD_SERVER_REPLY (8), …   -> other
"""

import errno
import io
import os
import queue
import sys
import threading
import time

import pycurl

from exec_protocol import (emit, hello, log_unknown_settings, logger, new_answer, read_config, request_body,
                           requests_from_stdin, set_error, set_response)

log = logger("curl_client")

TLS_CODES = {pycurl.E_PEER_FAILED_VERIFICATION, pycurl.E_SSL_CONNECT_ERROR, 58, 77}
POLL = 0.005  # seconds the loop waits on libcurl's sockets before it looks for new requests


class Client:
    """One CurlMulti (one connection cache) running every request's easy handle."""

    def __init__(self, config):
        self.multi = pycurl.CurlMulti()
        self.options = []
        if config.get("timeout") is not None:
            self.options.append((pycurl.TIMEOUT_MS, int(float(config["timeout"]) * 1000)))
        if config.get("connect_timeout") is not None:
            self.options.append((pycurl.CONNECTTIMEOUT_MS, int(float(config["connect_timeout"]) * 1000)))
        if config.get("pool") is not None:
            self.multi.setopt(pycurl.M_MAXCONNECTS, int(config["pool"]))
        if config.get("retries") is not None:
            log(f"retries={config['retries']}: libcurl has no retry count; its resend on a dead reused connection stays")
        ca = os.environ.get("CURL_CA_BUNDLE")
        if ca:
            self.options.append((pycurl.CAINFO, ca))
        log_unknown_settings(config, (), log)
        log(f"libcurl options: {self.options}, pool={config.get('pool')}")
        self.incoming = queue.Queue()
        self.running = {}

    def start(self, request, received):
        """Adds one request's transfer to the multi handle (on the loop's thread)."""
        curl = pycurl.Curl()
        for option, value in self.options:
            curl.setopt(option, value)
        method = request.get("method", "GET")
        curl.setopt(pycurl.URL, request["url"])
        curl.setopt(pycurl.CUSTOMREQUEST, method)
        curl.setopt(pycurl.HTTPHEADER, [f"{k}: {v}" for k, v in (request.get("headers") or {}).items()])
        data = request_body(request)
        if data is not None:
            curl.setopt(pycurl.POSTFIELDS, data)
        elif method == "HEAD":
            curl.setopt(pycurl.NOBODY, True)
        body, head = io.BytesIO(), []
        curl.setopt(pycurl.WRITEDATA, body)
        curl.setopt(pycurl.HEADERFUNCTION, head.append)
        self.running[curl] = (request, received, body, head)
        self.multi.add_handle(curl)

    def finish(self, curl, code=None, message=""):
        request, received, body, head = self.running.pop(curl)
        answer = new_answer(request)
        if code is None:
            set_response(answer, curl.getinfo(pycurl.RESPONSE_CODE), final_headers(head), body.getvalue())
        else:
            set_error(answer, pycurl.error(code, message), lambda e: error_kind(e, curl), log)
        port = curl.getinfo(pycurl.LOCAL_PORT)  # 0 or -1: no connection was made
        answer["local_port"] = port if port > 0 else None
        self.multi.remove_handle(curl)
        curl.close()
        answer["elapsed"] = round(time.monotonic() - received, 6)
        emit(answer)

    def run(self):
        """The transfer loop: until stdin has closed (None queued) and every transfer finished."""
        closing = False
        while not closing or self.running:
            while True:
                try:
                    item = self.incoming.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    closing = True
                else:
                    self.start(*item)
            while self.multi.perform()[0] == pycurl.E_CALL_MULTI_PERFORM:
                pass
            while True:
                queued, done, failed = self.multi.info_read()
                for curl in done:
                    self.finish(curl)
                for curl, code, message in failed:
                    self.finish(curl, code, message)
                if not queued:
                    break
            if self.running:
                self.multi.select(POLL)
            elif not closing:
                try:  # idle: wait for the next request without spinning
                    item = self.incoming.get(timeout=1)
                except queue.Empty:
                    continue
                if item is None:
                    closing = True
                else:
                    self.start(*item)


def final_headers(lines):
    """The header fields of the last response head (libcurl passes every head, e.g. a 100 Continue)."""
    fields = []
    for raw in lines:
        line = raw.decode("latin-1").rstrip("\r\n")
        if line.startswith("HTTP/"):
            fields = []
        elif ":" in line:
            name, value = line.split(":", 1)
            fields.append((name.strip(), value.strip()))
    return fields


def error_kind(exc, curl):
    code = exc.args[0] if exc.args else None
    os_errno = curl.getinfo(pycurl.OS_ERRNO)
    message = str(exc.args[1]) if len(exc.args) > 1 else ""
    if code == pycurl.E_COULDNT_RESOLVE_HOST:
        return "dns"
    # A reset in answer to the ClientHello (a portal's tls=reset) fails the handshake as
    # CURLE_SSL_CONNECT_ERROR, but what happened is a reset, as every other client reports it.
    if code == pycurl.E_SSL_CONNECT_ERROR and (os_errno in (errno.ECONNRESET, errno.EPIPE) or "reset by peer" in message):
        return "reset"
    if code in TLS_CODES:
        return "tls"
    if code == pycurl.E_COULDNT_CONNECT and (os_errno == errno.ECONNREFUSED or "refused" in message):
        return "refused"
    if code == pycurl.E_OPERATION_TIMEDOUT:
        return "timeout"
    if code == pycurl.E_GOT_NOTHING:
        return "closed-before-response"
    if code in (pycurl.E_RECV_ERROR, pycurl.E_SEND_ERROR) and (
            os_errno in (errno.ECONNRESET, errno.EPIPE) or "reset by peer" in message or "Broken pipe" in message):
        return "reset"
    return "other"


def main():
    config = read_config(log)
    client = Client(config)  # built before hello: start-up is not scenario time
    parts = pycurl.version.split()  # "PycURL/7.49.0 libcurl/8.23.0 OpenSSL/3.6.5 …"
    hello("curl", f"{parts[1]} ({parts[0]}, {parts[2]})")

    def read():  # stdin on its own thread: the transfer loop never blocks on it
        for request, received in requests_from_stdin(log):
            client.incoming.put((request, received))
        client.incoming.put(None)

    threading.Thread(target=read, daemon=True).start()
    client.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
