#!/usr/bin/env python3
"""What a relay can reach on this machine: one iperf3 stream direct, through netsim relay, through
a bare C relay copying (read/write) and splicing (splice(2) through a pipe), and through socat,
interleaved round by round, each measurement on fresh processes (iperf3 -s -1 and a new relay).
The rate is the iperf3 server's own "receiver" figure. Loopback only; about 25 s per round and
write size.

    python3 Fixtures/bench/ceiling.py --netsim .build/release/netsim [--rounds 3]

Needs iperf3, gcc and socat (ci/setup installs iperf3 and socat). docs/benchmarks.md has a run.
"""
import argparse, os, statistics, subprocess, sys, tempfile, time

here = os.path.dirname(os.path.abspath(__file__))

def measure(mode, write_size, port, tools):
    server = subprocess.Popen(["iperf3", "-s", "-1", "-f", "g", "-B", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    relay, target = None, port
    upstream = f"127.0.0.1:{port}"
    if mode == "netsim":
        relay = [tools["netsim"], "relay", "--listen", f"127.0.0.1:{port + 1}", "--upstream", upstream]
    elif mode in ("copy", "splice"):
        relay = [tools["relay"], mode, str(port + 1), str(port)]
    elif mode == "socat":
        relay = ["socat", "-b", "131072", f"TCP-LISTEN:{port + 1},bind=127.0.0.1,reuseaddr,fork", f"TCP:{upstream}"]
    child = None
    try:
        time.sleep(0.3)
        if relay:
            child = subprocess.Popen(relay, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            target = port + 1
            time.sleep(0.6)
        subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", str(target), "-t", "4", "-l", write_size],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
        out, _ = server.communicate(timeout=10)
        line = [l for l in out.splitlines() if l.rstrip().endswith("receiver")][-1]
        return float(line.split("Gbits/sec")[0].split()[-1])
    except (subprocess.TimeoutExpired, IndexError, ValueError):
        return float("nan")
    finally:
        for process in (child, server):
            if process and process.poll() is None:
                process.kill()
                process.wait()

def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--netsim", required=True, help="the netsim binary (a release build)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--port", type=int, default=34000, help="first of the loopback ports used (2 per measurement)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as build:
        relay = os.path.join(build, "ceiling_relay")
        subprocess.run(["gcc", "-O2", "-pthread", "-o", relay, os.path.join(here, "ceiling_relay.c")], check=True)
        tools = {"netsim": args.netsim, "relay": relay}
        modes = ["direct", "netsim", "copy", "splice", "socat"]
        port = args.port
        for write_size in ("128K", "1M"):
            results = {mode: [] for mode in modes}
            for _ in range(args.rounds):
                for mode in modes:
                    port += 2
                    results[mode].append(measure(mode, write_size, port, tools))
            direct = statistics.median(results["direct"])
            print(f"{write_size} writes, median of {args.rounds} (Gbit/s, × direct; every run):")
            for mode in modes:
                median = statistics.median(results[mode])
                runs = ", ".join(f"{x:.1f}" for x in results[mode])
                print(f"  {mode:7} {median:6.1f}  {median / direct:4.2f}×  [{runs}]")
    print("load average:", open("/proc/loadavg").read().split()[:3])

if __name__ == "__main__":
    sys.exit(main())
