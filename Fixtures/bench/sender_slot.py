#!/usr/bin/env python3
"""Does the sender leave a shaped packet link idle? A 3 s download through `netsim shell
--bandwidth 1mbit`, repeated, with the server's congestion control chosen (this machine's default
is BBR): the goodput after the first second against the link's rate × 1448/1500, and every gap
between the client's reads longer than 16 ms (a 1500-byte packet takes 12 ms at 1 Mbit/s).

docs/benchmarks.md (the packet path section) has what it found: with BBR some runs lose one packet
slot (−0.6 to −0.75%) with every packet released on time; with CUBIC none do. Linux, root.

    sudo python3 Fixtures/bench/sender_slot.py --netsim .build/release/netsim --runs 10 --cc bbr
    sudo python3 Fixtures/bench/sender_slot.py --netsim .build/release/netsim --runs 10 --cc cubic
"""
import argparse
import socket
import struct
import subprocess
import sys
import threading
import time

HOST = "198.18.0.1"  # a lone shell's host side (netsim shell --help)

CLIENT = r"""
import socket, struct, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
n, skip = int(sys.argv[3]), float(sys.argv[4]) * 1e9
s.sendall(struct.pack('>Q', n))
buf = bytearray(262144)
got, first, mark, mark_bytes, last, prev, gaps = 0, None, None, 0, 0, None, []
while got < n:
    k = s.recv_into(buf)
    if k == 0: raise SystemExit('the server closed the stream')
    last = time.monotonic_ns(); got += k
    if first is None: first = last
    if prev is not None and last - prev > 16e6: gaps.append('%.1f ms at %.0f ms' % ((last - prev) / 1e6, (prev - first) / 1e6))
    prev = last
    if mark is None and last - first >= skip: mark, mark_bytes = last, got
print((got - mark_bytes) * 8e9 / (last - mark), '; '.join(gaps) or '-')
"""


def serve(port, cc, stop):
    """Answers each connection's 8-byte length with that many bytes, on HOST once it exists."""
    while not stop.is_set():
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        try:
            listener.bind((HOST, port))
        except OSError:  # the shell's host side is not up yet
            listener.close()
            time.sleep(0.01)
            continue
        listener.listen(4)
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except socket.timeout:
                continue
            except OSError:
                break  # the address went away with the shell
            n = struct.unpack(">Q", connection.recv(8))[0]
            connection.sendall(b"x" * n)
            connection.close()
        listener.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--netsim", required=True, help="the netsim binary")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--cc", default="bbr", help="the server's congestion control (bbr, cubic, …)")
    parser.add_argument("--port", type=int, default=39111)
    args = parser.parse_args()
    rate, seconds, skip = 1e6, 3.0, 1.0
    stop = threading.Event()
    threading.Thread(target=serve, args=(args.port, args.cc, stop), daemon=True).start()
    lost = 0
    try:
        for run in range(args.runs):
            out = subprocess.run([args.netsim, "shell", "--bandwidth", "1mbit", "--", sys.executable, "-c", CLIENT,
                                  HOST, str(args.port), str(int(rate / 8 * seconds)), str(skip)],
                                 capture_output=True, text=True, timeout=60).stdout.split(maxsplit=1)
            error = float(out[0]) / (rate * 1448 / 1500) - 1
            lost += error < -0.005
            print(f"run {run + 1}: {error * 100:+.3f}%  gaps: {out[1].strip()}", flush=True)
    finally:
        stop.set()
    print(f"{args.cc}: {lost} of {args.runs} runs below -0.5%")


if __name__ == "__main__":
    main()
