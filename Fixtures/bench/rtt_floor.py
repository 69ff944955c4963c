#!/usr/bin/env python3
"""The least round trip a relay can add on this machine: 100-byte ping-pongs direct, through
netsim relay, through the bare C relay of ceiling_relay.c (one blocking thread per direction, no
event loop: a read wakes straight into the thread) and through socat (nodelay), every process
pinned to CPU 0 as `netsim bench`'s "one core" rows are. Paths alternate in blocks, each on one
connection kept open; the figure is each path's percentile minus direct's.

    python3 Fixtures/bench/rtt_floor.py --netsim .build/release/netsim [--count 50000]

The client is Python, so its own time per ping-pong is larger than the bench's Swift client;
it is the same on every path and cancels in the added figures. docs/benchmarks.md has a run.
"""
import argparse, os, socket, subprocess, sys, tempfile, time

from ceiling import build_relay, relay_command

ECHO = """
import socket, sys
listener = socket.socket(); listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", int(sys.argv[1]))); listener.listen(16)
while True:
    connection, _ = listener.accept()
    connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    import threading
    def echo(c):
        while (data := c.recv(65536)):
            c.sendall(data)
    threading.Thread(target=echo, args=(connection,), daemon=True).start()
"""

def pin_to_cpu0():
    os.sched_setaffinity(0, {0})

def connect(port, within=5.0):
    deadline = time.monotonic() + within
    while True:
        try:
            s = socket.create_connection(("127.0.0.1", port))
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.settimeout(10)  # a path that stops answering ends the run, not hangs it
            return s
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)

def ping_pong(s, count, message=b"x" * 100, record=None):
    for _ in range(count):
        started = time.perf_counter_ns()
        s.sendall(message)
        got = 0
        while got < len(message):
            data = s.recv(len(message) - got)
            if not data:
                raise ConnectionError("the path closed the connection")
            got += len(data)
        if record is not None:
            record.append(time.perf_counter_ns() - started)

def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))]

def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--netsim", required=True, help="the netsim binary (a release build)")
    parser.add_argument("--count", type=int, default=50_000, help="ping-pongs per path")
    parser.add_argument("--port", type=int, default=35000, help="first of the loopback ports used")
    args = parser.parse_args()
    pin_to_cpu0()  # children inherit it
    modes = ["direct", "netsim", "copy", "socat"]
    children = []
    try:
        with tempfile.TemporaryDirectory() as build:
            tools = {"netsim": args.netsim, "relay": build_relay(build)}
            echo_port = args.port
            children.append(subprocess.Popen([sys.executable, "-c", ECHO, str(echo_port)]))
            sockets = {}
            for index, mode in enumerate(modes):
                command = relay_command(mode, args.port + 1 + index, echo_port, tools, nodelay=True)
                if command:
                    children.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
                sockets[mode] = connect(args.port + 1 + index if command else echo_port)
            for s in sockets.values():
                ping_pong(s, 2_000)  # warm-up
            samples = {mode: [] for mode in modes}
            for _ in range(10):  # alternating blocks: every path sees the same machine
                for mode in modes:
                    ping_pong(sockets[mode], args.count // 10, record=samples[mode])
    finally:
        for child in children:
            child.kill()
            child.wait()
    base = {p: percentile(samples["direct"], p) for p in (50, 99)}
    print(f"one core, {args.count:,} ping-pongs of 100 bytes per path: round trip p50 / p99, and added over direct")
    for mode in modes:
        p50, p99 = percentile(samples[mode], 50), percentile(samples[mode], 99)
        print(f"  {mode:7} {p50 / 1000:6.1f} / {p99 / 1000:6.1f} µs   +{(p50 - base[50]) / 1000:5.1f} / +{(p99 - base[99]) / 1000:5.1f} µs")
    print("load average:", open("/proc/loadavg").read().split()[:3])

if __name__ == "__main__":
    sys.exit(main())
