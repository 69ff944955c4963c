#!/usr/bin/env python3
"""What a relay can reach on this machine: one iperf3 stream direct, through netsim relay, through
a bare C relay copying (read/write), splicing (splice(2) through a pipe), copying with a reader
and a writer thread per direction (pipelined) or copying with reads that wait for 128 KiB
(lowat: SO_RCVLOWAT and a 1 ms receive timeout), and through socat,
interleaved round by round, each measurement on fresh processes (iperf3 -s -1 and a new relay).
The rate is the iperf3 server's own "receiver" figure. Beside it, the whole machine's CPU while
the client ran (/proc/stat, every process and the kernel's softirq work): cores busy, and CPU
seconds per GB carried. A rate is cores busy over CPU per GB: with the cores busy known, the CPU
per GB of a path bounds what it can reach (2 cores / its CPU per GB at most). Loopback only; about 25 s per round and write size.

    python3 Fixtures/bench/ceiling.py --netsim .build/release/netsim [--rounds 3] [--modes direct,netsim,copy] [--sizes 128K]
        [--before OTHER_NETSIM --link '--latency 25ms --bandwidth 100mbit']

Needs iperf3, gcc and socat (ci/setup installs iperf3 and socat). docs/benchmarks.md has a run.
"""
import argparse, os, statistics, subprocess, sys, tempfile, time

here = os.path.dirname(os.path.abspath(__file__))
C_MODES = ("copy", "splice", "pipelined", "lowat")
MODES = ("direct", "netsim", "before") + C_MODES + ("socat",)

def cpu_jiffies():
    """(busy, all) jiffies of every CPU so far, from /proc/stat's first line: user nice system
    idle iowait irq softirq steal (guest time is already in user); idle, iowait and steal (time
    the hypervisor gave elsewhere) are not busy."""
    fields = [int(x) for x in open("/proc/stat").readline().split()[1:9]]
    return sum(fields) - fields[3] - fields[4] - fields[7], sum(fields)

def relay_command(mode, listen, upstream, tools, nodelay=False, link=()):
    """The command of a relay from 127.0.0.1:listen to 127.0.0.1:upstream, or None for direct.
    netsim and the C relay always set TCP_NODELAY; socat only with `nodelay`. `link`: netsim's
    link flags (netsim and before only)."""
    if mode in ("netsim", "before"):
        return [tools[mode], "relay", "--listen", f"127.0.0.1:{listen}", "--upstream", f"127.0.0.1:{upstream}", *link]
    if mode in C_MODES:
        return [tools["relay"], mode, str(listen), str(upstream)]
    if mode == "socat":
        option = ",nodelay" if nodelay else ""
        return ["socat", "-b", "131072", f"TCP-LISTEN:{listen},bind=127.0.0.1,reuseaddr,fork{option}",
                f"TCP:127.0.0.1:{upstream}{option}"]
    return None

def build_relay(directory):
    """Compiles ceiling_relay.c into `directory`; returns its path."""
    relay = os.path.join(directory, "ceiling_relay")
    subprocess.run(["gcc", "-O2", "-pthread", "-o", relay, os.path.join(here, "ceiling_relay.c")], check=True)
    return relay

def measure(mode, write_size, port, tools, link=()):
    """(Gbit/s, cores busy, CPU s per GB) of one run; NaNs if it failed."""
    server = subprocess.Popen(["iperf3", "-s", "-1", "-f", "g", "-B", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    relay, target = relay_command(mode, port + 1, port, tools, link=link), port
    child = None
    try:
        time.sleep(0.3)
        if relay:
            child = subprocess.Popen(relay, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            target = port + 1
            time.sleep(0.6)
        busy0, all0 = cpu_jiffies()
        started = time.monotonic()
        subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", str(target), "-t", "4", "-l", write_size],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
        wall = time.monotonic() - started
        busy1, all1 = cpu_jiffies()
        out, _ = server.communicate(timeout=10)
        line = [l for l in out.splitlines() if l.rstrip().endswith("receiver")][-1]
        gbits = float(line.split("Gbits/sec")[0].split()[-1])  # -f g: always in Gbit/s
        cores = os.cpu_count() * (busy1 - busy0) / (all1 - all0)
        return gbits, cores, cores * wall / (gbits * 4 / 8)
    except (subprocess.TimeoutExpired, IndexError, ValueError, ZeroDivisionError):
        return float("nan"), float("nan"), float("nan")
    finally:
        for process in (child, server):
            if process and process.poll() is None:
                process.kill()
                process.wait()

def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--netsim", required=True, help="the netsim binary (a release build)")
    parser.add_argument("--before", help="another netsim binary, measured as the path `before` in the same rounds (an A/B of a change)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--modes", default=",".join(m for m in MODES if m != "before"),
                        help=f"which paths, comma-separated, direct first (default: all of {', '.join(m for m in MODES if m != 'before')})")
    parser.add_argument("--sizes", default="128K,1M", help="iperf3 write sizes, comma-separated (default: 128K,1M)")
    parser.add_argument("--link", default="", help="netsim relay link flags for netsim and before, e.g."
                        " '--latency 25ms --bandwidth 100mbit' (the CPU a shaped or delayed path costs)")
    parser.add_argument("--port", type=int, default=34000, help="first of the loopback ports used (2 per measurement)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as build:
        tools = {"netsim": args.netsim, "before": args.before, "relay": build_relay(build)}
        modes = args.modes.split(",")
        if "before" in modes and not args.before:
            parser.error("--modes before needs --before PATH")
        unknown = [mode for mode in modes if mode not in MODES]
        if unknown or modes[0] != "direct":
            parser.error(f"--modes: {', '.join(unknown) or modes[0]}: the paths are {', '.join(MODES)}, direct first")
        port = args.port
        for write_size in args.sizes.split(","):
            results = {mode: [] for mode in modes}
            for _ in range(args.rounds):
                for mode in modes:
                    port += 2
                    results[mode].append(measure(mode, write_size, port, tools, link=args.link.split()))
            def median(mode, i):
                return statistics.median(r[i] for r in results[mode])
            direct, direct_cpu = median("direct", 0), median("direct", 2)
            print(f"{write_size} writes, median of {args.rounds}: Gbit/s, × direct [every run]; cores busy;"
                  " CPU s per GB, and direct's CPU per GB over it (its rate × direct at direct's cores busy):")
            for mode in modes:
                runs = ", ".join(f"{r[0]:.1f}" for r in results[mode])
                print(f"  {mode:9} {median(mode, 0):6.1f}  {median(mode, 0) / direct:4.2f}×  [{runs}]"
                      f"  {median(mode, 1):4.2f} cores  {median(mode, 2):5.3f} s/GB  {direct_cpu / median(mode, 2):4.2f}×")
    print("load average:", open("/proc/loadavg").read().split()[:3])

if __name__ == "__main__":
    sys.exit(main())
