#!/usr/bin/env python3
"""How late a relay reads bytes that arrive after it has been idle: the part of an injected
delay's error that no relay counting the delay from its own read can remove.

A sender process writes 100 bytes to a loopback TCP connection every GAP (50 ms, the bench's
delay, and 1 ms for comparison); the receiver process waits in epoll (as SwiftNIO's event loop
does), then reads with recvmsg and SO_TIMESTAMPNS, which gives the time the kernel received
the bytes. The lateness is the read's clock minus the kernel's receive time: the wake-up of an
idle thread (and vCPU) plus the read. No pinning: the processes go where the scheduler puts them.

    python3 Fixtures/bench/wakeup_floor.py [--samples 400]

docs/benchmarks.md ("Injected latency") has a run. Loopback only; about 25 s.
"""
import argparse, multiprocessing, os, select, socket, statistics, struct, sys, time

SO_TIMESTAMPNS = 35  # Linux; Python's socket module does not name it


def send(port, gap, samples, ready):
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    ready.wait()
    payload = b"x" * 100
    next_at = time.monotonic()
    for _ in range(samples):
        next_at += gap
        time.sleep(max(0.0, next_at - time.monotonic()))
        sock.sendall(payload)
    sock.close()


def measure(gap, samples, tick=None):
    """Lateness of each read after the kernel received its bytes, in µs; with `tick`, the
    receiver also wakes every `tick` seconds while it waits (a periodic timer keeping it warm)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    ready = multiprocessing.Event()
    sender = multiprocessing.Process(target=send, args=(listener.getsockname()[1], gap, samples, ready))
    sender.start()
    conn, _ = listener.accept()
    listener.close()
    conn.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    conn.setblocking(False)
    poller = select.epoll()
    poller.register(conn.fileno(), select.EPOLLIN)
    late = []
    ready.set()
    try:
        waited = 0.0
        while len(late) < samples:
            if not poller.poll(tick or 5.0):
                waited += tick or 5.0
                if waited >= 5.0:
                    break
                continue
            waited = 0.0
            data, ancillary, _, _ = conn.recvmsg(4096, 64)
            now = time.clock_gettime(time.CLOCK_REALTIME)
            if not data:
                break
            for level, kind, value in ancillary:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                    seconds, nanoseconds = struct.unpack("qq", value[:16])
                    late.append((now - seconds - nanoseconds / 1e9) * 1e6)
    finally:
        sender.join(timeout=10)
        conn.close()
    return late


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=400)
    args = parser.parse_args()
    for gap, tick in ((0.050, None), (0.050, 0.001), (0.001, None)):
        late = sorted(measure(gap, args.samples if gap >= 0.01 else 5 * args.samples, tick))
        label = f"read after idle {gap * 1000:g} ms" + (f", waking every {tick * 1000:g} ms meanwhile" if tick else "")
        if len(late) < 10:
            print(f"{label}: too few samples ({len(late)})")
            continue
        quantile = statistics.quantiles(late, n=100)
        print(f"{label} ({len(late)} reads): lateness after the kernel's receive time "
              f"p50 {quantile[49]:.0f} µs, p90 {quantile[89]:.0f} µs, p99 {quantile[98]:.0f} µs, max {late[-1]:.0f} µs")
    print("load average:", open("/proc/loadavg").read().split()[:3])


if __name__ == "__main__":
    sys.exit(main())
