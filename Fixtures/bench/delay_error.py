#!/usr/bin/env python3
"""The error of a relay's injected delay alone: no measuring process's wake-up is in it.

A sender writes 100 bytes through `netsim relay --up-latency 50ms` every 50–150 ms (random
gaps: the relay is idle between them, as in a ping-pong) and reads CLOCK_REALTIME right after
each send — on loopback the bytes reach the relay's socket inside that send. The receiver,
behind the relay, reads with SO_TIMESTAMPNS: the time the kernel received the released bytes,
however late the receiver itself wakes. Error = receive time − send time − 50 ms: the relay's
own read of the bytes, its release timer, its write. Each binary runs in turn, round by round.

    python3 Fixtures/bench/delay_error.py BINARY [BINARY ...] [--samples 300] [--rounds 2]

docs/benchmarks.md ("Injected latency") has runs. Loopback only; about 25 s per run.
"""
import argparse, random, socket, statistics, struct, subprocess, sys, threading, time

SO_TIMESTAMPNS = 35  # Linux; Python's socket module does not name it
DELAY = 0.050


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def receive(listener, stamps, count):
    """Accepts the relay's upstream connection; records the kernel's receive time of each 100 B."""
    conn, _ = listener.accept()
    conn.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    pending = 0
    while len(stamps) < count:
        data, ancillary, _, _ = conn.recvmsg(4096, socket.CMSG_SPACE(16))
        if not data:
            return
        pending += len(data)
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                seconds, nanoseconds = struct.unpack("qq", payload[:16])
                while pending >= 100:
                    stamps.append(seconds + nanoseconds / 1e9)
                    pending -= 100
    conn.close()


def run(binary, samples, seed):
    """The error of each sample in µs, through one fresh relay, and how many samples arrived
    before the delay had passed even counted from before their send (released early)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = free_port()
    relay = subprocess.Popen([binary, "relay", "--listen", f"127.0.0.1:{port}", "--upstream",
                              f"127.0.0.1:{listener.getsockname()[1]}", "--up-latency", "50ms"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                sender = socket.create_connection(("127.0.0.1", port))
                break
            except ConnectionRefusedError:
                time.sleep(0.05)
        sender.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        stamps, sent = [], []
        reader = threading.Thread(target=receive, args=(listener, stamps, samples + 5))
        reader.start()
        gaps = random.Random(seed)
        for _ in range(samples + 5):  # the first five warm the connection up
            time.sleep(gaps.uniform(0.05, 0.15))
            before = time.clock_gettime(time.CLOCK_REALTIME)
            sender.sendall(b"x" * 100)
            sent.append((before, time.clock_gettime(time.CLOCK_REALTIME)))
        reader.join(timeout=5)
        sender.close()
        # The bytes reached the relay during the send: between the two clock reads. The error
        # counts from the second; "early" from the first, so a preempted sender cannot fake it.
        pairs = list(zip(sent, stamps))[5:]
        return [(got - after - DELAY) * 1e6 for (_, after), got in pairs], \
            sum(1 for (before, _), got in pairs if got - before < DELAY)
    finally:
        relay.terminate()
        relay.wait()
        listener.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binaries", nargs="+")
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    for round_ in range(1, args.rounds + 1):
        for binary in args.binaries:
            signed, early = run(binary, args.samples, seed=round_)
            errors = sorted(abs(error) for error in signed)
            if not errors:
                print(f"round {round_} {binary}: no samples", file=sys.stderr)
                continue
            pick = lambda p: errors[min(len(errors) - 1, int(p / 100 * len(errors)))]
            print(f"round {round_} {binary}: |error| p50 {pick(50):.0f} µs, p90 {pick(90):.0f} µs, "
                  f"p99 {pick(99):.0f} µs, max {errors[-1]:.0f} µs; released early: {early} "
                  f"({len(errors)} samples)", flush=True)


if __name__ == "__main__":
    main()
