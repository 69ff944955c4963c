import Foundation
import NetsimCore
import NetsimLoopback
import NetsimPacket
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `netsim shell` with real namespaces and TUN devices (root only; CI runs as root).
@Suite(.enabled(if: ShellHarness.canRun, "netsim shell tests need root and /dev/net/tun: \(ShellHarness.missing ?? "")"))
struct ShellTests {
    /// Fetches `body` with curl inside a shell with `flags`; returns curl's output line and the stats.
    static func fetch(_ flags: [String], body: [UInt8], curlOptions: String = "", after: String = "", ipv6: Bool = false) async throws -> (output: String, stats: PacketCounters, result: WatchedProcess.Result) {
        let statsPath = ShellHarness.temporaryPath("stats.json")
        defer { try? FileManager.default.removeItem(atPath: statsPath) }
        let url = ipv6 ? "http://[$NETSIM_HOST6]:$port/blob" : "http://$NETSIM_HOST:$port/blob"
        let script = "curl -sS -g --max-time 60 \(curlOptions) \(url) | sha256sum; \(after)"
        let (process, host) = try await ShellHarness.start(flags + ["--stats", statsPath], script: script,
                                                           announcing: ipv6 ? "NETSIM_HOST6" : "NETSIM_HOST")
        if ipv6 {
            #expect(host.hasPrefix("2001:2:"), "NETSIM_HOST6=\(host)")
        } else {
            #expect(PacketAddressPlan.contains(try #require(IPv4Address(text: host))))
        }
        let server = try HostSideServer(host: host, body: body)
        defer { server.stop() }
        try process.write("\(server.port)\n")
        let result = try await process.result(within: .seconds(90))
        let stats = try JSONDecoder().decode(PacketCounters.self, from: Data(contentsOf: URL(fileURLWithPath: statsPath)))
        return (result.standardOutput, stats, result)
    }

    static func sha256(_ bytes: [UInt8]) async throws -> String {
        let path = ShellHarness.temporaryPath("blob")
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return String(try await ShellHarness.tool("/usr/bin/sha256sum", [path]).prefix(64))
    }

    @Test func curlInsideFetchesIntactBytesFromAServerOnTheHostSideThroughRealLoss() async throws {
        let body = [UInt8].pattern(count: 1 << 20, seed: 11)
        let (output, stats, result) = try await Self.fetch(["--latency", "5ms", "--loss", "2%", "--seed", "3"], body: body)
        #expect(result.status == 0, "\(result.standardError)")
        #expect(output.contains(try await Self.sha256(body)), "\(output)\n\(result.standardError)")
        // Real loss: the shaper dropped packets and the kernels' TCP retransmitted them.
        #expect(stats.up.lost + stats.down.lost > 0)
        #expect(stats.down.deliveredBytes > body.count)
        #expect(stats.notForHost == 0)
    }

    @Test func overIPv6TooWithTheSameLink() async throws {
        let body = [UInt8].pattern(count: 300_000, seed: 13)
        let (output, stats, result) = try await Self.fetch(["--latency", "5ms", "--loss", "2%", "--seed", "6"], body: body, ipv6: true)
        #expect(result.status == 0, "\(result.standardError)")
        #expect(output.contains(try await Self.sha256(body)), "\(output)\n\(result.standardError)")
        #expect(stats.up.lost + stats.down.lost > 0)
        #expect(stats.notForHost == 0 && stats.notIP == 0, "\(stats)")
    }

    @Test func duplicatedCorruptedReorderedAndQueuedPacketsStillGiveIntactBytes() async throws {
        // Duplicates are discarded by TCP, corrupted packets by the receiver's checksum, reordered
        // ones are put back in order, the full queue's drops retransmitted: the body arrives intact.
        let body = [UInt8].pattern(count: 1 << 20, seed: 12)
        let flags = ["--latency", "10ms", "--duplicate", "5%", "--corrupt", "2%", "--reorder", "5%",
                     "--bandwidth", "50mbit", "--queue", "20p", "--seed", "5"]
        let (output, stats, result) = try await Self.fetch(flags, body: body)
        #expect(result.status == 0, "\(result.standardError)")
        #expect(output.contains(try await Self.sha256(body)), "\(output)\n\(result.standardError)")
        #expect(stats.down.duplicated > 0 && stats.down.corrupted > 0 && stats.down.reordered > 0, "\(stats)")
    }

    @Test func aBurstOverflowsTheQueueAndEveryPacketIsAccountedFor() async throws {
        // 50 datagrams of 1000 bytes at once into 1 Mbit/s (8 ms each) behind a 5-packet buffer:
        // most are dropped at the tail. TCP would back off; UDP makes the overflow certain.
        let statsPath = ShellHarness.temporaryPath("stats.json")
        defer { try? FileManager.default.removeItem(atPath: statsPath) }
        let burst = "import os, socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); [s.sendto(b'x' * 972, (os.environ['NETSIM_HOST'], 9)) for _ in range(50)]"
        let result = try await ShellHarness.run(["--up-bandwidth", "1mbit", "--up-queue", "5p", "--stats", statsPath, "--",
                                                 "sh", "-c", "python3 -c \"\(burst)\" && sleep 0.3"])
        #expect(result.status == 0, "\(result.standardError)")
        let stats = try JSONDecoder().decode(PacketCounters.self, from: Data(contentsOf: URL(fileURLWithPath: statsPath)))
        // 50, plus perhaps an RST answering a stray packet of an earlier shell's host socket.
        #expect((50...55).contains(stats.up.received), "\(stats)")
        #expect(stats.up.queueFull >= 30, "\(stats)")
        #expect(stats.up.delivered + stats.up.queueFull + stats.up.inFlightAtExit == stats.up.received, "\(stats)")
        #expect(result.standardError.contains("dropped at a full queue"))
    }

    @Test func aTraceLimitsTheDownloadToItsCapacity() async throws {
        // One 1500-byte opportunity every 2 ms: 6 Mbit/s of IP packets. 1 MiB of body needs at
        // least 1.4 s of them (more with headers); nothing else in the path is that slow.
        let tracePath = ShellHarness.temporaryPath("trace.down")
        defer { try? FileManager.default.removeItem(atPath: tracePath) }
        try (1...500).map { "\($0 * 2)" }.joined(separator: "\n").write(toFile: tracePath, atomically: true, encoding: .utf8)
        let body = [UInt8].pattern(count: 1 << 20, seed: 14)
        let file = "/tmp/netsim-trace-body-\(getpid())"
        let script = "curl -sS --max-time 60 -o \(file) -w 'total=%{time_total}\\n' http://$NETSIM_HOST:$port/blob; sha256sum < \(file); rm -f \(file)"
        let (process, host) = try await ShellHarness.start(["--trace-down", tracePath, "--queue", "100p"], script: script)
        let server = try HostSideServer(host: host, body: body)
        defer { server.stop() }
        try process.write("\(server.port)\n")
        let result = try await process.result(within: .seconds(90))
        let output = result.standardOutput
        #expect(result.status == 0, "\(result.standardError)")
        #expect(output.contains(try await Self.sha256(body)), "\(output)")
        let line = try #require(output.split(separator: "\n").first { $0.hasPrefix("total=") })
        let total = try #require(Double(line.dropFirst("total=".count)))
        #expect(total >= 1.39 && total < 30, "1 MiB through a 6 Mbit/s trace took \(total) s")
        #expect(result.standardError.contains("trace.down (6.0 Mbit/s mean over 1 s)"), "\(result.standardError)")
    }

    @Test func latencyIsAppliedToEveryPacketBothWays() async throws {
        // 100 ms each way: TCP's handshake takes one round trip, so curl's connect time is ≥ 200 ms,
        // with no tolerance below: the path releases no packet before its time (its thread wakes
        // early on purpose and spins to the release). The upper bound only says "not wildly more"
        // (a loaded CI machine may add a lot).
        let (output, _, result) = try await Self.fetch(["--latency", "100ms"], body: Array("hello".utf8), after: "curl -s -o /dev/null -w 'connect=%{time_connect}\\n' http://$NETSIM_HOST:$port/again")
        #expect(result.status == 0, "\(result.standardError)")
        let line = try #require(output.split(separator: "\n").first { $0.hasPrefix("connect=") })
        let connect = try #require(Double(line.dropFirst("connect=".count)))
        #expect(connect >= 0.2 && connect < 3, "connect took \(connect) s with a 200 ms round trip")
    }

    @Test func packetsToAnyOtherAddressAreDroppedAndCounted() async throws {
        let statsPath = ShellHarness.temporaryPath("stats.json")
        defer { try? FileManager.default.removeItem(atPath: statsPath) }
        // 192.0.2.1 (TEST-NET-1) and 127.0.0.1 of the host are both unreachable from inside.
        let result = try await ShellHarness.run(["--stats", statsPath, "--", "sh", "-c",
            "curl -s --max-time 1 http://192.0.2.1:9/; echo curl=$?"])
        #expect(result.status == 0)
        #expect(result.standardOutput.contains("curl=28"), "curl must time out: \(result.standardOutput)")
        let stats = try JSONDecoder().decode(PacketCounters.self, from: Data(contentsOf: URL(fileURLWithPath: statsPath)))
        #expect(stats.notForHost >= 1)
        // Nothing of curl's reached the host. (A host socket left from an earlier shell on the same
        // addresses may still retransmit into this one, whose kernel answers with an RST: an
        // answer, never more packets than came in.)
        #expect(stats.up.delivered <= stats.down.received, "\(stats)")
        #expect(result.standardError.contains("dropped (no forwarding)"))
    }

    @Test func theCommandsExitStatusIsTheShells() async throws {
        let result = try await ShellHarness.run(["--", "sh", "-c", "test -n \"$NETSIM_HOST\" && exit 3"])
        #expect(result.status == 3)
    }

    /// The names a shell of process `pid` could have left: its namespace, its devices.
    static func leftovers(of pids: [Int32]) async throws -> [String] {
        let links = try await ShellHarness.tool(IPRoute.executable ?? "/usr/sbin/ip", ["-o", "link", "show"])
        let routes = try await ShellHarness.tool(IPRoute.executable ?? "/usr/sbin/ip", ["-o", "route", "show"])
        var found: [String] = []
        for pid in pids {
            found += ShellHarness.namespaces().filter { NamespaceName(parsing: $0)?.pid == pid }
            found += ((try? FileManager.default.contentsOfDirectory(atPath: NamespaceResolverFiles.root)) ?? []).filter { NamespaceName(parsing: $0)?.pid == pid }
            for device in ["nsim\(pid)h", "nsim\(pid)c"] {
                found += (links + routes).split(separator: "\n").filter { $0.contains(device) }.map(String.init)
            }
        }
        return found
    }

    @Test func fiftyShellsLeaveNoNamespaceDeviceOrRouteBehind() async throws {
        var pids: [Int32] = []
        for _ in 0..<10 {
            let shells = try (0..<5).map { _ in try WatchedProcess(ShellHarness.executable, ["shell", "--latency", "1ms", "--", "true"]) }
            for shell in shells {
                pids.append(shell.processIdentifier)
                let status = await shell.exit(within: .seconds(60))
                #expect(status == 0, "\(shell.text(.error))")
            }
        }
        #expect(Set(pids).count == 50)
        #expect(try await Self.leftovers(of: pids) == [])
    }

    /// A command that cannot run exits as in a shell (127, 126), before a namespace is made.
    @Test func aCommandThatCannotRunExitsAsInAShell() async throws {
        let plain = ShellHarness.temporaryPath("not-executable.sh")
        try "echo hi\n".write(toFile: plain, atomically: true, encoding: .utf8)  // mode 0644
        // QA 38: a folder, a script whose interpreter is missing and an empty name made the
        // namespace and exited 1 (`exec of … failed`), where bash says 126, 127 and 127.
        let badInterpreter = ShellHarness.temporaryPath("bad-interpreter.sh")
        try "#!/nonexistent/interpreter\necho hi\n".write(toFile: badInterpreter, atomically: true, encoding: .utf8)
        chmod(badInterpreter, 0o755)
        let folder = ShellHarness.temporaryPath("a-folder")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { for path in [plain, badInterpreter, folder] { try? FileManager.default.removeItem(atPath: path) } }
        for (argv, status, says) in [(["/nonexistent/netsim-test"], 127, "no such file"), (["netsim-no-such-command"], 127, "command not found"),
                                     ([plain], 126, "not executable"), ([folder], 126, "is a folder"),
                                     ([badInterpreter], 127, "its interpreter /nonexistent/interpreter (from its #! line) is missing"),
                                     ([""], 127, "an empty command name")] {
            let events = ShellHarness.temporaryPath("unrun.jsonl")
            let result = try await WatchedProcess(ShellHarness.executable, ["shell", "--events", events, "--"] + argv).result(within: .seconds(30))
            #expect(result.status == Int32(status), "\(argv): \(result.standardError)")
            #expect(result.standardError.contains(says) && !result.standardError.contains("NETSIM_HOST="), "\(result.standardError)")
            #expect(!FileManager.default.fileExists(atPath: events), "nothing ran, so no event log is written")
            try? FileManager.default.removeItem(atPath: events)
        }
    }

    @Test func sigtermEndsTheCommandAndRemovesEverything() async throws {
        let shell = try WatchedProcess(ShellHarness.executable, ["shell", "--", "sleep", "30"])
        _ = try await shell.line(.error, within: .seconds(30)) { $0.contains("NETSIM_HOST=") }
        kill(shell.processIdentifier, SIGTERM)
        let status = await shell.exit(within: .seconds(10))
        #expect(status == 128 + SIGTERM, "\(shell.text(.error))")
        #expect(try await Self.leftovers(of: [shell.processIdentifier]) == [])
    }

    /// The processes whose command line holds `pattern` (pgrep -f), one line each.
    static func running(_ pattern: String) async throws -> String {
        try await WatchedProcess(URL(fileURLWithPath: "/usr/bin/pgrep"), ["-f", pattern]).result(within: .seconds(10)).standardOutput
    }

    /// A command that ignores SIGTERM is killed 2 s later with every process in its namespace:
    /// killing the command alone left its foreground child running, orphaned.
    @Test func aStopTheCommandIgnoresKillsItsChildrenToo() async throws {
        let seconds = "29.\(Int.random(in: 100...999))"  // this test's own `sleep`, under 30 s
        let shell = try WatchedProcess(ShellHarness.executable, ["shell", "--", "sh", "-c", "trap '' TERM; echo trapped; sleep \(seconds); true"])
        // Once sh ignores SIGTERM; its sleep starts at once, well inside the 2 s before the kill.
        _ = try await shell.line(.output, within: .seconds(30)) { $0 == "trapped" }
        kill(shell.processIdentifier, SIGTERM)
        let status = await shell.exit(within: .seconds(15))
        #expect(status == 128 + SIGKILL, "\(shell.text(.error))")
        let sleeping = try await Self.running("sleep \(seconds)")
        #expect(sleeping.isEmpty, "left running: \(sleeping)")
        #expect(try await Self.leftovers(of: [shell.processIdentifier]) == [])
    }

    /// A command that SIGTERM ends at once, having started children in the background: they
    /// are killed with it (QA 66: they ran on, orphaned in a namespace no sweep could find).
    @Test func aStopKillsWhatTheCommandLeftInTheBackground() async throws {
        let seconds = "28.\(Int.random(in: 100...999))"
        let shell = try WatchedProcess(ShellHarness.executable, ["shell", "--", "sh", "-c", "sleep \(seconds) & echo started; sleep 30"])
        _ = try await shell.line(.output, within: .seconds(30)) { $0 == "started" }
        kill(shell.processIdentifier, SIGTERM)
        let status = await shell.exit(within: .seconds(15))
        #expect(status == 128 + SIGTERM, "\(shell.text(.error))")
        let sleeping = try await Self.running("sleep \(seconds)")
        #expect(sleeping.isEmpty, "left running: \(sleeping)")
        #expect(try await Self.leftovers(of: [shell.processIdentifier]) == [])
    }

    /// Ctrl-C during `netsim run` of a packet-link scenario deletes its namespace and resolver
    /// files at once (packet.md), as a normal end does, and leaves a whole capture. Before, they
    /// waited for the next run's sweep and the capture lost libpcap's buffer. Interrupted as
    /// soon as the namespace exists (while it is set up), or once the first request is under
    /// way (the resolver's files written, the client running inside, packets captured).
    @Test(arguments: [(SIGINT, false), (SIGHUP, false), (SIGTERM, true)])
    func anInterruptedPacketRunRemovesItsNamespace(_ sig: Int32, midRun: Bool) async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let capture = ShellHarness.temporaryPath("interrupted.pcap")
        defer { try? FileManager.default.removeItem(atPath: capture) }
        let run = try WatchedProcess(ShellHarness.executable, ["run", "Scenarios/real-loss.scn", "--pcap", capture], directory: root)
        let pid = run.processIdentifier
        if midRun {
            // Signalled by the thread that reads the line, as it reads it: the run has about a
            // second left then, and a test task resumed that much later under a loaded CI run
            // found it over (status 0).
            let hadNamespace = Waitable<Bool?>(nil)
            run.whenLine(.output, where: { $0.contains("✓ first") }) { _ in
                let exists = ShellHarness.namespaces().contains { NamespaceName(parsing: $0)?.pid == pid }
                kill(pid, sig)
                hadNamespace.update { $0 = exists }
            }
            let existed = await hadNamespace.wait(within: .seconds(60), until: { $0 })
            #expect(existed == true, "\(run.text(.error))")
        } else {
            let deadline = ContinuousClock.now + .seconds(60)
            while !ShellHarness.namespaces().contains(where: { NamespaceName(parsing: $0)?.pid == pid }), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))  // polling, with a deadline
            }
            #expect(ShellHarness.namespaces().contains { NamespaceName(parsing: $0)?.pid == pid }, "\(run.text(.error))")
            kill(pid, sig)
        }
        let status = await run.exit(within: .seconds(30))
        #expect(status == 128 + sig, "\(run.text(.error))")
        #expect(run.text(.error).contains("interrupted by"), "\(run.text(.error))")
        let left = try await Self.leftovers(of: [pid])
        #expect(left == [], "\(run.text(.error))")
        if midRun {
            // tshark exits 2 on a capture cut in the middle of a packet.
            let read = try await WatchedProcess(URL(fileURLWithPath: "/usr/bin/tshark"), ["-r", capture, "-Y", "tcp", "-T", "fields", "-e", "frame.number"])
                .result(within: .seconds(60))
            #expect(read.status == 0, "\(read.standardError)")
            #expect(read.standardOutput.split(separator: "\n").count > 50, "the capture so far: \(read.standardOutput.prefix(200))")
        }
    }

    @Test func aKilledShellsNamespaceIsSweptByTheNextShell() async throws {
        let shell = try WatchedProcess(ShellHarness.executable, ["shell", "--", "sleep", "30"])
        _ = try await shell.line(.error, within: .seconds(30)) { $0.contains("NETSIM_HOST=") }
        let pid = shell.processIdentifier
        let name = try #require(ShellHarness.namespaces().first { NamespaceName(parsing: $0)?.pid == pid })
        // The command it started, ended by the test below (it is this test's grandchild). The
        // banner comes before the launch: the official CI once read the namespace's processes
        // between the two and found none.
        var orphans = ""
        let launched = ContinuousClock.now + .seconds(30)
        while orphans.isEmpty, ContinuousClock.now < launched {
            orphans = try await ShellHarness.tool(IPRoute.executable ?? "/usr/sbin/ip", ["netns", "pids", name])
            if orphans.isEmpty { try await Task.sleep(for: .milliseconds(20)) }  // polling, with a deadline
        }
        kill(pid, SIGKILL)
        _ = await shell.exit(within: .seconds(10))
        defer { for orphan in orphans.split(separator: "\n").compactMap({ Int32($0) }) { kill(orphan, SIGKILL) } }
        // The devices died with it; the namespace's name is what a crash leaves (a shell another
        // test starts meanwhile may sweep it already: tests run in parallel).
        #expect(try await ShellHarness.tool(IPRoute.executable ?? "/usr/sbin/ip", ["-o", "link", "show"]).contains("nsim\(pid)") == false)
        let next = try await ShellHarness.run(["--", "true"])
        #expect(next.status == 0)
        // This shell's sweep, or that of a shell another test started meanwhile, removed it: nothing
        // else deletes a netsim-… namespace. The one that did says so.
        #expect(!ShellHarness.namespaces().contains(name))
        #expect(try await Self.leftovers(of: [pid]) == [])
        // The command it left running in there was ended by the sweep that removed the name
        // (QA 63: it ran on). This test's orphans are its only processes in that namespace.
        let pids = orphans.split(separator: "\n").compactMap { Int32($0) }
        #expect(!pids.isEmpty)
        #expect(pids.allSatisfy { ProcessStat(pid: $0)?.isLive != true }, "\(pids) still running")
    }

    @Test func pcapRecordsTheNamespacesPacketsAndTsharkSeesRealRetransmissions() async throws {
        let capture = ShellHarness.temporaryPath("shell.pcap")
        defer { try? FileManager.default.removeItem(atPath: capture) }
        let body = [UInt8].pattern(count: 300_000, seed: 5)
        let (output, stats, result) = try await Self.fetch(["--down-loss", "5%", "--latency", "2ms", "--seed", "9", "--pcap", capture], body: body)
        #expect(result.status == 0, "\(result.standardError)")
        #expect(output.contains(try await Self.sha256(body)))
        #expect(stats.down.lost > 0)
        let retransmissions = try await ShellHarness.tool("/usr/bin/tshark", ["-r", capture, "-Y", "tcp.analysis.retransmission || tcp.analysis.fast_retransmission", "-T", "fields", "-e", "frame.number"])
        #expect(!retransmissions.isEmpty, "tshark found no retransmission in \(capture)")
        // The transfer's packets, over IPv4 (the first packets of the capture may be the kernel's
        // own IPv6: neighbour discovery, and once in ccAG two TCP packets without IPv4 before
        // the transfer's).
        let endpoints = try await ShellHarness.tool("/usr/bin/tshark", ["-r", capture, "-Y", "tcp && ip", "-T", "fields", "-e", "ip.src", "-e", "ip.dst"])
        #expect(endpoints.hasPrefix("198.1"), "raw IP packets of the namespace's link: \(endpoints.prefix(200))")
    }
}

extension ShellTests {
    @Test func theCaptureShowsTheKernelsSYNBackoff() async throws {
        // Every packet out of the namespace is lost: curl's connect sends a SYN and the kernel
        // retries it, all in the capture. The initial RTO is 1 s; it doubles per retry, except that
        // Linux 6.5+ keeps the first `tcp_syn_linear_timeouts` retries (default 4) at 1 s.
        let capture = ShellHarness.temporaryPath("syn.pcap")
        defer { try? FileManager.default.removeItem(atPath: capture) }
        let result = try await ShellHarness.run(["--up-loss", "100%", "--pcap", capture, "--", "sh", "-c",
            "curl -s --connect-timeout 4 http://$NETSIM_HOST:9/; echo curl=$?"])
        #expect(result.standardOutput.contains("curl=28"), "\(result.standardOutput)\n\(result.standardError)")
        let times = try await ShellHarness.tool("/usr/bin/tshark", ["-r", capture, "-Y", "tcp.flags.syn == 1", "-T", "fields", "-e", "frame.time_relative"])
            .split(separator: "\n").compactMap { Double($0) }
        #expect(times.count >= 3, "SYNs at \(times)")
        if times.count >= 3 {
            // Kernel timers, not netsim's: generous bounds for a loaded machine, but the shape shows.
            let linear = (try? String(contentsOfFile: "/proc/sys/net/ipv4/tcp_syn_linear_timeouts", encoding: .utf8))
                .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 0
            #expect((0.9...1.6).contains(times[1] - times[0]), "\(times)")
            let second = linear >= 2 ? 0.9...1.6 : 1.9...2.8
            #expect(second.contains(times[2] - times[1]), "\(times) with tcp_syn_linear_timeouts \(linear)")
        }
        let retransmitted = try await ShellHarness.tool("/usr/bin/tshark", ["-r", capture, "-Y", "tcp.flags.syn == 1 && tcp.analysis.retransmission", "-T", "fields", "-e", "frame.number"])
        #expect(retransmitted.split(separator: "\n").count >= 2)
    }
}

/// Flag errors need neither root nor a device: they are checked first.
@Suite struct ShellFlagTests {
    @Test func flagsAPacketPathCannotHonourAreRefusedWithTheReason() async throws {
        let slice = try await ShellHarness.run(["--slice", "100", "--", "true"])
        #expect(slice.status != 0)
        #expect(slice.standardError.contains("--slice, --slice-delay and --slice-variation are for netsim relay and proxy"), "\(slice.standardError)")
        let queue = try await ShellHarness.run(["--queue", "10p", "--", "true"])
        #expect(queue.standardError.contains("--queue needs a --bandwidth"), "\(queue.standardError)")
        let downQueue = try await ShellHarness.run(["--up-bandwidth", "1mbit", "--down-queue", "10p", "--", "true"])
        #expect(downQueue.standardError.contains("--down-queue needs a bandwidth that way"), "\(downQueue.standardError)")
        let reorder = try await ShellHarness.run(["--reorder", "5%", "--", "true"])
        #expect(reorder.standardError.contains("needs a --latency"), "\(reorder.standardError)")
        let badQueue = try await ShellHarness.run(["--bandwidth", "1mbit", "--queue", "lots", "--", "true"])
        #expect(badQueue.standardError.contains("queue size"), "\(badQueue.standardError)")
    }

    @Test func theRelayRefusesPacketOnlyFlagsWithTheReason() async throws {
        let relay = try await ShellHarness.relay(["--duplicate", "1%"])
        #expect(relay.status != 0)
        #expect(relay.standardError.contains("--duplicate acts on single packets, which netsim relay never sees"), "\(relay.standardError)")
    }
}

/// What a machine without root sees: one line, exit 2, nothing created. Run as `nobody` through
/// setpriv, so it needs root to start (and util-linux's setpriv); from a copy of netsim that
/// nobody can reach wherever the checkout is (``SharedCopy``).
@Suite(.enabled(if: ShellHarness.canRun && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
                "needs root and /usr/bin/setpriv"))
struct ShellWithoutRootTests {
    @Test func withoutRootItSaysSoInOneLineAndExits2() async throws {
        let shared = try SharedCopy([ShellHarness.executable])
        defer { shared.remove() }
        let result = try await WatchedProcess(URL(fileURLWithPath: "/usr/bin/setpriv"),
            ["--reuid=65534", "--regid=65534", "--clear-groups", shared.path("netsim"), "shell", "--", "true"],
            directory: URL(fileURLWithPath: "/")).result(within: .seconds(30))
        #expect(result.status == 2)
        #expect(result.standardError == "netsim shell: needs root (it creates a network namespace and TUN devices): run it with sudo\n")
        #expect(result.standardOutput.isEmpty)
    }
}
