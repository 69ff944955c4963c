"""Drives `netsim serve` with the PyPI package toxiproxy-python (0.1.1), unchanged, and checks
that traffic through the proxy shows each toxic's effect.

Usage: python toxiproxy_scenario.py API_PORT
Exit status 0 when every step passed; otherwise the failing step is printed.
"""
import socket
import sys
import threading
import time

from toxiproxy import Toxiproxy
from toxiproxy.exceptions import InvalidToxic, NotFound, ProxyExists

api_port = int(sys.argv[1])
server = Toxiproxy()
server.update_api_consumer("127.0.0.1", api_port)


def step(message):
    print("step:", message, flush=True)


def fail(message):
    print("FAILED:", message, flush=True)
    sys.exit(1)


# A loopback echo server, the proxy's upstream.
listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 0))
listener.listen(16)
echo_port = listener.getsockname()[1]


def echo(conn):
    try:
        while True:
            data = conn.recv(65536)
            if not data:
                break
            conn.sendall(data)
    except OSError:
        pass
    finally:
        conn.close()


def accept_loop():
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=echo, args=(conn,), daemon=True).start()


threading.Thread(target=accept_loop, daemon=True).start()


def connect(port):
    return socket.create_connection(("127.0.0.1", port), timeout=5)


def exchange(sock, payload=b"ping"):
    """Sends payload, reads until as many bytes came back or EOF; returns (bytes, seconds)."""
    start = time.monotonic()
    sock.sendall(payload)
    got = b""
    while len(got) < len(payload):
        data = sock.recv(65536)
        if not data:
            break
        got += data
    return got, time.monotonic() - start


# A round trip without a toxic is "fast" below FAST seconds; the latency toxic adds LATENCY.
# Far apart, so a machine busy with other work (a slow round trip) cannot blur them.
FAST = 0.5
LATENCY = 1.0


def roundtrip(port, payload=b"ping"):
    with connect(port) as sock:
        return exchange(sock, payload)


step("the server runs and answers /version")
if not server.running():
    fail("toxiproxy-python says the server is not running")
if not server.version():
    fail("no version")

step("create a proxy to the echo server on a free port")
proxy = server.create(upstream="127.0.0.1:%d" % echo_port, name="echo")
port = int(proxy.listen.rsplit(":", 1)[1])
if port == 0:
    fail("listen port 0 was not replaced by the real port: %s" % proxy.listen)
if "echo" not in server.proxies():
    fail("the proxy is not listed")
try:
    server.create(upstream="127.0.0.1:%d" % echo_port, name="echo")
    fail("creating it twice did not raise ProxyExists")
except ProxyExists:
    pass

step("no toxic: the echo is fast")
data, seconds = roundtrip(port)
if data != b"ping" or seconds >= FAST:
    fail("baseline: %r in %.3fs" % (data, seconds))
live = connect(port)
data, _ = exchange(live)
if data != b"ping":
    fail("live connection: %r" % data)

step("latency downstream delays new and already open connections")
proxy.add_toxic(type="latency", attributes={"latency": int(LATENCY * 1000), "jitter": 0})
if "latency_downstream" not in proxy.toxics():
    fail("toxic not listed: %r" % list(proxy.toxics()))
data, seconds = roundtrip(port)
if data != b"ping" or not (LATENCY * 0.98 <= seconds <= LATENCY + 5.0):
    fail("with latency, new connection: %r in %.3fs" % (data, seconds))
data, seconds = exchange(live)
if data != b"ping" or not (LATENCY * 0.98 <= seconds <= LATENCY + 5.0):
    fail("with latency, open connection: %r in %.3fs" % (data, seconds))

step("removing the latency makes it fast again")
proxy.destroy_toxic("latency_downstream")
data, seconds = roundtrip(port)
if data != b"ping" or seconds >= FAST:
    fail("after removal: %r in %.3fs" % (data, seconds))
live.close()

step("an unknown toxic type is refused with 400")
try:
    proxy.add_toxic(type="no_such_toxic")
    fail("unknown type accepted")
except InvalidToxic:
    pass

step("reset_peer resets connections")
proxy.add_toxic(type="reset_peer", name="reset", attributes={"timeout": 0})
try:
    data, _ = roundtrip(port)
    fail("no reset: got %r" % data)
except (ConnectionResetError, BrokenPipeError):
    pass
proxy.destroy_toxic("reset")
data, _ = roundtrip(port)
if data != b"ping":
    fail("after removing reset_peer: %r" % data)

step("outage, a netsim toxic type, answers HTTP with 503 in the server's place; removing it restores the upstream")
try:
    proxy.add_toxic(type="outage", name="outage", attributes={"kind": "404"})
    fail("an unknown outage kind was accepted")
except InvalidToxic:
    pass
proxy.add_toxic(type="outage", name="outage", attributes={"kind": "503"})
listed = proxy.get_toxic("outage")
if listed is None or listed.type != "outage" or listed.attributes.get("kind") != "503":
    fail("outage toxic not listed as sent: %r" % (listed and vars(listed)))
request = b"GET /health HTTP/1.1\r\nHost: echo.test\r\n\r\n"
with connect(port) as sock:
    sock.sendall(request)
    answer = b""
    while b"\r\n\r\n" not in answer:
        data = sock.recv(65536)
        if not data:
            break
        answer += data
if not answer.startswith(b"HTTP/1.1 503") or b"Retry-After: 2\r\n" not in answer:
    fail("with outage: %r" % answer)
proxy.destroy_toxic("outage")
data, _ = roundtrip(port, request)
if data != request:
    fail("after removing outage, the echo upstream should answer: %r" % data)

step("limit_data 3 passes three bytes, then closes")
proxy.add_toxic(type="limit_data", name="limit", attributes={"bytes": 3})
data, _ = roundtrip(port)
if data != b"pin":
    fail("limit_data: %r" % data)

step("a disabled proxy refuses connections")
proxy.disable()
try:
    connect(port).close()
    fail("connected to a disabled proxy")
except ConnectionRefusedError:
    pass
if server.get_proxy("echo").enabled:
    fail("the proxy is listed as enabled")

step("enabled again, it accepts (the limit toxic still acts)")
proxy.enable()
data, _ = roundtrip(port)
if data != b"pin":
    fail("after enable: %r" % data)

step("reset removes every toxic and re-enables proxies")
proxy.disable()
server.reset()
if proxy.toxics():
    fail("toxics left after reset: %r" % list(proxy.toxics()))
data, seconds = roundtrip(port)
if data != b"ping" or seconds >= FAST:
    fail("after reset: %r in %.3fs" % (data, seconds))

step("destroy")
if not proxy.destroy():
    fail("destroy returned false")
try:
    proxy.toxics()
    fail("toxics of a destroyed proxy")
except NotFound:
    pass
if server.proxies():
    fail("proxies left: %r" % list(server.proxies()))

print("OK: toxiproxy-python scenario passed", flush=True)
