import Foundation
import NetsimCore
import NetsimLoopback
import NetsimPacket
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `netsim shell --fault`: each packet fault against real sockets in a real namespace. A Python
/// client inside reports `key=value` lines; it follows the fault timeline through the --events
/// file, so the tests wait for events, not for guessed times.
@Suite(.enabled(if: ShellHarness.canRun, "netsim shell tests need root and /dev/net/tun: \(ShellHarness.missing ?? "")"))
struct PacketFaultTests {
    /// What every client script starts with: the host, the events file, the ports, helpers.
    static let prelude = #"""
        import errno, os, socket, sys, time
        HOST = os.environ['NETSIM_HOST']
        EVENTS = sys.argv[1]
        PORTS = [int(p) for p in sys.argv[2:]]
        def events():
            with open(EVENTS) as f: return f.read()
        def fired(name): return '"event":"fault","fault":"%s"' % name
        def lifted(name): return '"event":"fault_lifted","fault":"%s"' % name
        def wait_event(text, limit=15):
            end = time.monotonic() + limit
            while time.monotonic() < end:
                if text in events(): return
                time.sleep(0.01)
            print('missing=' + text, flush=True); sys.exit(3)
        def report(**values):
            for key, value in values.items(): print('%s=%s' % (key, value), flush=True)
        def error(e): return errno.errorcode.get(e.errno, str(e)) if e.errno else type(e).__name__
        def exchange(sock, text):
            sock.sendall(text.encode() + b'\n')
            return sock.recv(100).decode().strip()
        def original_source():
            # The namespace's address before any handover: the host side's + 1 (PacketAddressPlan).
            head, last = HOST.rsplit('.', 1)
            return '%s.%d' % (head, int(last) + 1)
        def opening(fault):
            # The connection the fault must find open. Made after the fault started, the run is
            # late (see run() in the test), which is reported, not failed. A fault's event comes
            # once the namespace has changed, so a connection from a moved address is late too.
            try:
                a = socket.create_connection((HOST, PORTS[0]), timeout=5)
                first = exchange(a, 'one')
            except OSError:
                time.sleep(0.2)
                if fired(fault) in events(): report(late=True); sys.exit(0)
                raise
            late = fired(fault) in events() or a.getsockname()[0] != original_source()
            report(first=first, late=late, old_source=a.getsockname()[0], old_port=a.getsockname()[1])
            return a

        """#

    struct Run {
        var values: [String: String]
        var events: [[String: Any]]
        var result: WatchedProcess.Result
        var pid: Int32

        subscript(key: String) -> String? { values[key] }

        func events(_ name: String, fault: String) -> [[String: Any]] {
            events.filter { $0["event"] as? String == name && $0["fault"] as? String == fault }
        }
    }

    /// Runs `client` (Python, after the prelude) in a shell with `flags(scale)` and --events;
    /// `servers` makes the host side's servers once the host address is known and returns their
    /// ports.
    ///
    /// The fault timeline starts with the shell, and the client can start only after a round
    /// trip through this test (the server's port): on a machine loaded by parallel tests that can
    /// take longer than the fault's start, and the client, which must do its first step before
    /// the fault, reports `late=True`. Such a run proves nothing either way, so it is run again
    /// with every time three times longer (scale 3), once.
    static func run(_ flags: (Double) -> [String], client: String, servers: (String) async throws -> ([Int], stop: () -> Void)) async throws -> Run {
        let first = try await runOnce(flags(1), client: client, servers: servers)
        guard first["late"] == "True" else { return first }
        return try await runOnce(flags(3), client: client, servers: servers)
    }

    private static func runOnce(_ flags: [String], client: String, servers: (String) async throws -> ([Int], stop: () -> Void)) async throws -> Run {
        let script = ShellHarness.temporaryPath("client.py")
        let eventsPath = ShellHarness.temporaryPath("events.jsonl")
        defer { for path in [script, eventsPath] { try? FileManager.default.removeItem(atPath: path) } }
        try (prelude + client).write(toFile: script, atomically: true, encoding: .utf8)
        let (process, host) = try await ShellHarness.start(flags + ["--events", eventsPath], script: "python3 \(script) \(eventsPath) $port")
        let (ports, stop) = try await servers(host)
        defer { stop() }
        try process.write(ports.map(String.init).joined(separator: " ") + "\n")
        let result = try await process.result(within: .seconds(40))
        var values: [String: String] = [:]
        for line in result.standardOutput.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            values[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        let events = try String(contentsOfFile: eventsPath, encoding: .utf8).split(separator: "\n")
            .compactMap { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        return Run(values: values, events: events, result: result, pid: process.processIdentifier)
    }

    /// An echo server on the host side.
    static func echo(_ host: String) throws -> ([Int], stop: () -> Void) {
        let server = try LoopbackServer.echo(host: host)
        return ([server.endpoint.port], server.stop)
    }

    static func number(_ text: String?) -> Double { text.flatMap(Double.init) ?? .nan }

    @Test func offlineFailsNewConnectsAtOnceAndOpenConnectionsCarryOnWhenItLifts() async throws {
        let client = #"""
            a = opening('offline')
            wait_event(fired('offline'))
            t = time.monotonic()
            try:
                socket.create_connection((HOST, PORTS[0]), timeout=5); report(connect='ok')
            except OSError as e:
                report(connect=error(e), connect_ms=round((time.monotonic() - t) * 1000, 1))
            a.sendall(b'two\n')
            a.settimeout(0.5)
            try: report(during=a.recv(100))
            except socket.timeout: report(during='silence')
            wait_event(lifted('offline'))
            a.settimeout(10)
            t = time.monotonic()
            report(after=a.recv(100).decode().strip(), resumed_ms=round((time.monotonic() - t) * 1000))
            """#
        let run = try await Self.run({ ["--fault", "offline@\(1.5 * $0)s+1s"] }, client: client, servers: Self.echo)
        #expect(run.result.status == 0, "\(run.result.standardOutput)\n\(run.result.standardError)")
        #expect(run["first"] == "one" && run["late"] == "False", "the client started after the fault (a very slow machine): \(run.values)")
        #expect(run["connect"] == "ENETUNREACH", "\(run.values)")
        // "At once": no packet is sent, the route lookup fails. 1 s leaves room for a loaded machine
        // and is still far below any TCP timer (the first SYN retry is 1 s).
        #expect(Self.number(run["connect_ms"]) < 1000, "\(run.values)")
        #expect(run["during"] == "silence" && run["after"] == "two", "\(run.values)")
        #expect(run.events("fault", fault: "offline").count == 1 && run.events("fault_lifted", fault: "offline").count == 1)
        // Time never goes back in the log: `fault_added` was stamped at the path's origin, before
        // the seed line written above it (QA 45).
        let times = run.events.compactMap { $0["t"] as? Double }
        #expect(times.count == run.events.count && times == times.sorted(), "\(run.events)")
        #expect(run.result.standardError.contains("faults: offline at "), "\(run.result.standardError)")
        #expect(try await ShellTests.leftovers(of: [run.pid]) == [])
    }

    @Test func handoverKillsOpenConnectionsAndNewOnesLeaveFromTheNewAddress() async throws {
        let client = #"""
            a = opening('handover')
            wait_event(fired('handover'))
            a.settimeout(3)
            t = time.monotonic()
            try: report(old_conn='answer:' + exchange(a, 'two'))
            except OSError as e: report(old_conn=error(e), old_ms=round((time.monotonic() - t) * 1000, 1))
            b = socket.create_connection((HOST, PORTS[0]), timeout=5)
            report(new=exchange(b, 'three'), new_source=b.getsockname()[0])
            """#
        let run = try await Self.run({ ["--fault", "handover@\(1.5 * $0)s"] }, client: client, servers: Self.echo)
        #expect(run.result.status == 0, "\(run.result.standardOutput)\n\(run.result.standardError)")
        #expect(run["first"] == "one" && run["late"] == "False", "\(run.values)")
        let old = try #require(run["old_source"].flatMap(IPv4Address.init(text:)))
        let new = try #require(run["new_source"].flatMap(IPv4Address.init(text:)))
        #expect(new.value == old.value + 1 && PacketAddressPlan.contains(new), "\(run.values)")
        #expect(run["new"] == "three", "\(run.values)")
        let fired = try #require(run.events("fault", fault: "handover").first?["detail"] as? String)
        if fired.contains("destroyed") {
            // The socket was destroyed with the address (SOCK_DESTROY): the next call fails at once.
            #expect(run["old_conn"] == "ECONNABORTED", "\(run.values)")
            #expect(Self.number(run["old_ms"]) < 1000, "\(run.values)")
        } else {
            #expect(run["old_conn"] == "timeout", "without ss -K the old connection can only hang: \(run.values)")
        }
        #expect(try await ShellTests.leftovers(of: [run.pid]) == [])
    }

    /// QA 38: a handover while offline failed half-way (`route replace` on the downed device),
    /// so `ss -K` never ran and the open connection hung until its own timeout. Now the sockets
    /// are destroyed at the handover, and when the interface comes back it has the new address.
    @Test func aHandoverWhileOfflineStillDestroysTheSocketsAndTheLinkComesBackAtTheNewAddress() async throws {
        let client = #"""
            a = opening('offline')
            wait_event(fired('handover'))
            wait_event(lifted('offline'))
            a.settimeout(3)
            try: report(old_conn='answer:' + exchange(a, 'two'))
            except OSError as e: report(old_conn=error(e))
            b = socket.create_connection((HOST, PORTS[0]), timeout=5)
            report(new=exchange(b, 'three'), new_source=b.getsockname()[0])
            """#
        let run = try await Self.run({ ["--fault", "offline@\(1.5 * $0)s+\(1.5 * $0)s", "--fault", "handover@\(2 * $0)s"] }, client: client, servers: Self.echo)
        #expect(run.result.status == 0, "\(run.result.standardOutput)\n\(run.result.standardError)")
        #expect(run["first"] == "one" && run["late"] == "False", "\(run.values)")
        let fired = try #require(run.events("fault", fault: "handover").first?["detail"] as? String)
        #expect(!fired.contains("could not change"), "\(fired)")
        if fired.contains("destroyed") { #expect(run["old_conn"] == "ECONNABORTED", "\(run.values)") }
        let old = try #require(run["old_source"].flatMap(IPv4Address.init(text:)))
        #expect(run["new"] == "three" && run["new_source"] == IPv4Address(old.value + 1).description, "\(run.values)")
        #expect(try await ShellTests.leftovers(of: [run.pid]) == [])
    }

    @Test func blackholeMakesConnectWaitOutTheKernelsOwnSYNRetriesVisibleInTheCapture() async throws {
        // One SYN retry (this namespace's own sysctl): the kernel gives up when the doubling
        // schedule's budget is spent, 1 + 2 = 3 s, with a retry at 1 s, and with Linux 6.5+'s
        // linear timeouts (tcp_syn_linear_timeouts) one more at 2 s.
        let capture = ShellHarness.temporaryPath("blackhole.pcap")
        defer { try? FileManager.default.removeItem(atPath: capture) }
        let client = #"""
            with open('/proc/sys/net/ipv4/tcp_syn_retries', 'w') as f: f.write('1')
            s = socket.socket()
            t = time.monotonic()
            try: s.connect((HOST, PORTS[0])); report(connect='ok')
            except OSError as e: report(connect=error(e), connect_s=round(time.monotonic() - t, 2))
            report(late=lifted('blackhole') in events())
            wait_event(lifted('blackhole'))
            report(after=exchange(socket.create_connection((HOST, PORTS[0]), timeout=5), 'back'))
            """#
        let run = try await Self.run({ ["--fault", "blackhole+\(4.5 * $0)s", "--pcap", capture] }, client: client, servers: Self.echo)
        #expect(run.result.status == 0, "\(run.result.standardOutput)\n\(run.result.standardError)")
        let linear = (try? String(contentsOfFile: "/proc/sys/net/ipv4/tcp_syn_linear_timeouts", encoding: .utf8))
            .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 0
        let kernel = 3.0
        #expect(run["connect"] == "ETIMEDOUT" && run["late"] == "False", "\(run.values)")
        #expect(Self.number(run["connect_s"]) >= kernel - 0.1 && Self.number(run["connect_s"]) < kernel + 1.5, "\(run.values), kernel schedule \(kernel) s")
        #expect(run["after"] == "back", "\(run.values)")
        let drops = run.events("dropped", fault: "blackhole")
        // The SYNs, each dropped on its way up (the host side's own IPv6 neighbour discovery and
        // MLD reports may be dropped on their way down meanwhile: not counted here).
        let syns = drops.filter { $0["dir"] as? String == "up" }
        #expect(syns.count >= (linear >= 2 ? 3 : 2), "\(drops)")
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/tshark") {
            let syns = try await ShellHarness.tool("/usr/bin/tshark", ["-r", capture, "-Y", "tcp.flags.syn == 1 && tcp.flags.ack == 0 && tcp.analysis.retransmission", "-T", "fields", "-e", "frame.number"])
            #expect(syns.split(separator: "\n").count == (linear >= 2 ? 2 : 1), "tshark: SYN retransmissions during the blackhole: \(syns)")
        }
    }

    @Test func udpBlockDropsDatagramsWhileTCPPasses() async throws {
        let client = #"""
            t = socket.create_connection((HOST, PORTS[1]), timeout=5)
            report(tcp=exchange(t, 'tcp'), late=lifted('udp-block') in events())
            u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            u.settimeout(0.3)
            lost, start = 0, time.monotonic()
            while time.monotonic() - start < 10:
                u.sendto(b'ping', (HOST, PORTS[0]))
                try: report(udp=u.recvfrom(100)[0].decode()); break
                except socket.timeout: lost += 1
            report(udp_lost=lost)
            """#
        let udpEcho = #"import socket, sys; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((sys.argv[1], 0)); print(s.getsockname()[1], flush=True); s.settimeout(30)"#
            + "\nwhile True:\n    data, peer = s.recvfrom(100); s.sendto(data, peer)"
        let run = try await Self.run({ ["--fault", "udp-block+\(2 * $0)s"] }, client: client) { host in
            let udp = try WatchedProcess(URL(fileURLWithPath: "/usr/bin/python3"), ["-c", udpEcho, host])
            let port = try #require(Int(try await udp.line(.output, within: .seconds(5)) { Int($0) != nil }))
            let (tcp, stop) = try Self.echo(host)
            return ([port] + tcp, { stop(); udp.terminate() })
        }
        #expect(run.result.status == 0, "\(run.result.standardOutput)\n\(run.result.standardError)")
        #expect(run["tcp"] == "tcp" && run["late"] == "False", "TCP passes during udp-block: \(run.values)")
        #expect(run["udp"] == "ping", "\(run.values)")
        #expect(Int(run["udp_lost"] ?? "") ?? 0 >= 1, "\(run.values)")
        #expect(!run.events("dropped", fault: "udp-block").isEmpty)
    }

    @Test func staleAnswersAKeptAliveConnectionsNextRequestWithRSTAndNewConnectionsWork() async throws {
        let capture = ShellHarness.temporaryPath("stale.pcap")
        defer { try? FileManager.default.removeItem(atPath: capture) }
        let client = #"""
            a = opening('stale')
            wait_event(fired('stale'))
            a.settimeout(3)
            try: report(old_conn='answer:' + exchange(a, 'two'))
            except OSError as e: report(old_conn=error(e))
            b = socket.create_connection((HOST, PORTS[0]), timeout=5)
            report(new=exchange(b, 'three'), again=exchange(b, 'four'))
            """#
        let run = try await Self.run({ ["--fault", "stale@\(1.5 * $0)s", "--pcap", capture] }, client: client, servers: Self.echo)
        #expect(run.result.status == 0, "\(run.result.standardOutput)\n\(run.result.standardError)")
        #expect(run["first"] == "one" && run["late"] == "False", "\(run.values)")
        #expect(run["old_conn"] == "ECONNRESET", "\(run.values)")
        #expect(run["new"] == "three" && run["again"] == "four", "\(run.values)")
        #expect(run.events("fault", fault: "stale").contains { ($0["detail"] as? String)?.contains("RST to the client") == true })
        #expect(run.result.standardError.contains("2 RSTs sent by faults"), "\(run.result.standardError)")
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/tshark") {
            // The old connection's segments: the client's last one carries the ACK the RST must take.
            let port = try #require(run["old_port"])
            let segments = try await ShellHarness.tool("/usr/bin/tshark", ["-r", capture, "-Y", "tcp.port == \(port)", "-T", "fields",
                                                                           "-e", "tcp.srcport", "-e", "tcp.flags.reset", "-e", "tcp.seq_raw", "-e", "tcp.ack_raw"])
                .split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
            let resets = segments.filter { $0.count >= 3 && ($0[1] == "1" || $0[1] == "True") }
            #expect(resets.count == 1, "one RST reaches the namespace on the old connection: \(segments)")
            let reset = try #require(resets.first)
            let last = try #require(segments[..<segments.firstIndex(of: reset)!].last { $0.first == port })
            #expect(reset[0] != port && reset[2] == last[3], "the RST's sequence number is the client's last ACK: \(segments)")
        }
    }
}

/// Fault flags that cannot work are refused before anything is created.
@Suite struct PacketFaultFlagTests {
    /// Two rules of one fault overlapping: the first one's end is not the fault's, and the log
    /// says so (QA 63: a bare `fault_lifted` read as the fault over while it still acted).
    @Test func anOverlappedRulesEndIsNotTheFaultsLift() async throws {
        let events = ShellHarness.temporaryPath("overlap.jsonl")
        defer { try? FileManager.default.removeItem(atPath: events) }
        let result = try await ShellHarness.run(["--fault", "blackhole@0.2s+0.3s", "--fault", "blackhole@0.3s+30s", "--events", events, "--", "sleep", "1"])
        #expect(result.status == 0, "\(result.standardError)")
        let lines = try String(contentsOfFile: events, encoding: .utf8).split(separator: "\n")
        #expect(lines.contains { $0.contains(#""event":"fault""#) && $0.contains("blackhole at 200ms for 300ms ended; blackhole stays in force under another rule") },
                "\(lines.joined(separator: "\n"))")
        #expect(!lines.contains { $0.contains(#""event":"fault_lifted""#) && $0.contains(#""t":0.5"#) }, "\(lines.joined(separator: "\n"))")
        // The later window is cut short when the command ends, once (QA 67: it had no end at all).
        let lifted = lines.filter { $0.contains(#""event":"fault_lifted""#) }
        #expect(lifted.count == 1 && lifted[0].contains(#""fault":"blackhole","cut_short":"packet link stopped""#), "\(lines.joined(separator: "\n"))")
    }

    @Test func relayFaultsAndMeaninglessTimingsAreRefusedWithTheReason() async throws {
        // A name no fault has: the shell's five, not the relay's catalog first (QA 67).
        let bogus = try await ShellHarness.run(["--fault", "bogus@1s", "--", "true"])
        #expect(bogus.status == 64 && bogus.standardError.contains("'bogus@1s' is not a fault netsim shell injects; write it as NAME[=ARGUMENT][@AT][+FOR] with NAME one of stale, blackhole, offline, handover, udp-block"), "\(bogus.standardError)")
        #expect(!bogus.standardError.contains("slow-connect"), "\(bogus.standardError)")
        let portal = try await ShellHarness.run(["--fault", "portal", "--", "true"])
        #expect(portal.status != 0 && portal.standardError.contains("portal acts on HTTP requests at a relay"), "\(portal.standardError)")
        let handover = try await ShellHarness.run(["--fault", "handover@1s+2s", "--", "true"])
        #expect(handover.standardError.contains("a handover happens at one instant"), "\(handover.standardError)")
        let time = try await ShellHarness.run(["--fault", "offline@soon", "--", "true"])
        #expect(time.standardError.contains("whose @AT is a duration"), "\(time.standardError)")
    }

    @Test func theRelayRefusesPacketOnlyFaultsAndSaysWhereTheyWork() async throws {
        let relay = try await ShellHarness.relay(["--fault", "offline"])
        #expect(relay.status != 0 && relay.standardError.contains("offline is a packet-only fault"), "\(relay.standardError)")
        #expect(relay.standardError.contains("netsim shell --fault offline"), "\(relay.standardError)")
    }
}
