#!/usr/bin/env python3
"""netsim exec client: Python requests (https://requests.readthedocs.io), `--client requests`.

ONE requests.Session for the process (what an application that cares about keep-alive does;
`requests.get()` alone would open a new pool per call), requests on a thread pool. requests'
defaults are kept: NO timeout at all (requests waits forever unless given one), no retries
(HTTPAdapter's DEFAULT_RETRIES = 0, i.e. urllib3 `Retry(0, read=False)`), a pool of 10
connections per host (DEFAULT_POOLSIZE), redirects followed. Config maps by the protocol's rules
(docs/drivers.md):

    timeout          -> Session.request(timeout=(connect, read)): requests has no total timeout;
                        urllib3 applies `timeout` per connect and per socket read, so a server
                        that trickles bytes can take longer (requests' documented behaviour)
    connect_timeout  -> the connect part of that tuple (null: `timeout`, as requests does
                        with a single number)
    pool             -> HTTPAdapter(pool_maxsize=pool): connections kept per host
    retries          -> HTTPAdapter(max_retries=retries): requests' own count, which it turns
                        into urllib3's Retry.from_int(retries) -- connect, read and redirect
                        retries under it
    settings.block   -> HTTPAdapter(pool_block=...): wait for a free pooled connection
    settings.verify  -> false: don't verify TLS (requests' `verify`; never needed by netsim:
                        the CA comes as REQUESTS_CA_BUNDLE)

requests sits on urllib3, so local_port and the error kinds are urllib3_client's: the port is
noted by urllib3_client's connection classes (installed into the Session's PoolManager), and
requests' exceptions (ConnectionError, ReadTimeout, SSLError, ChunkedEncodingError) wrap the
urllib3 and socket exceptions urllib3_client.error_kind already classifies:

    ConnectionError(MaxRetryError(NewConnectionError(ConnectionRefusedError)))  -> refused
    ConnectionError(ProtocolError("Connection aborted.", RemoteDisconnected))  -> closed-before-response
    ConnectionError(ProtocolError(..., ConnectionResetError))                   -> reset
    ReadTimeout / ConnectTimeout                                                 -> timeout
    SSLError(MaxRetryError(SSLError))                                            -> tls
    ConnectionError(MaxRetryError(NameResolutionError))                          -> dns
    ChunkedEncodingError(ProtocolError("Connection broken: IncompleteRead"))     -> other
"""

import logging
import sys

import requests
import urllib3
from requests.adapters import HTTPAdapter

import urllib3_client
from exec_protocol import (hello, log_unknown_settings, logger, new_answer, read_config, request_body,
                           serve_threaded, set_error, set_response)

log = logger("requests_client")


def make_session(config):
    """One Session with requests' defaults, except what config sets."""
    settings = config.get("settings") or {}
    adapter_kwargs = {}
    if config.get("pool") is not None:
        adapter_kwargs["pool_maxsize"] = int(config["pool"])
    if config.get("retries") is not None:
        adapter_kwargs["max_retries"] = int(config["retries"])
    if urllib3_client.flag_setting(settings, "block") is not None:
        adapter_kwargs["pool_block"] = urllib3_client.flag_setting(settings, "block")
    session = requests.Session()
    for prefix in ("http://", "https://"):
        adapter = HTTPAdapter(**adapter_kwargs)
        # urllib3_client's pool classes note each attempt's local port; otherwise urllib3's own.
        adapter.poolmanager.pool_classes_by_scheme = {
            "http": urllib3_client.HTTPConnectionPool, "https": urllib3_client.HTTPSConnectionPool}
        session.mount(prefix, adapter)
    if urllib3_client.flag_setting(settings, "verify") is False:
        session.verify = False
        urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
    log_unknown_settings(config, {"verify", "block"}, log)
    timeout, connect = config.get("timeout"), config.get("connect_timeout")
    if timeout is None and connect is None:
        request_timeout = None  # requests' default: wait forever
    else:
        request_timeout = (connect if connect is not None else timeout, timeout)
    log(f"Session(HTTPAdapter({adapter_kwargs}), timeout={request_timeout})")
    return session, request_timeout


def perform(session, timeout, request):
    urllib3_client.note_attempt_start()
    answer = new_answer(request)
    try:
        response = session.request(request.get("method", "GET"), request["url"], headers=request.get("headers") or {},
                                   data=request_body(request), timeout=timeout)
        # response.raw.headers keeps repeated headers apart; set_response joins them.
        set_response(answer, response.status_code, response.raw.headers.items(), response.content)
    except Exception as exc:  # noqa: BLE001 -- every failure becomes an answer
        set_error(answer, exc, urllib3_client.error_kind, log, urllib3_client.attempt_write_error())
    answer["local_port"] = urllib3_client.attempt_port()
    return answer


def main():
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="requests_client: %(name)s: %(message)s")
    config = read_config(log)
    session, timeout = make_session(config)  # built before hello: start-up is not scenario time
    hello("requests", f"{requests.__version__} (urllib3 {urllib3.__version__})")
    serve_threaded(lambda request, received: perform(session, timeout, request),
                   max(16, int(config.get("pool") or 0)), log)
    session.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
