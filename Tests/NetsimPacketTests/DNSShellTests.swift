import Foundation
import NetsimCore
import NetsimLoopback
import NetsimPacket
import Testing

/// `netsim shell`'s resolver as real resolvers inside see it (glibc through Python and getent),
/// with real namespaces (root only; CI runs as root).
@Suite(.enabled(if: ShellHarness.canRun, "netsim shell tests need root and /dev/net/tun: \(ShellHarness.missing ?? "")"))
struct DNSShellTests {
    /// getaddrinfo for each name inside the shell: `name → ([addresses] or the EAI code, seconds)`.
    static let probe = """
        import json, socket, sys, time
        out = {}
        for name in sys.argv[1:]:
            start = time.monotonic()
            try:
                result = sorted({a[4][0] for a in socket.getaddrinfo(name, 80, proto=socket.IPPROTO_TCP)})
            except socket.gaierror as error:
                result = error.errno
            out[name] = [result, time.monotonic() - start]
        print("RESULT " + json.dumps(out))
        """

    struct Lookup {
        var addresses: [String]
        var eai: Int?
        var seconds: Double
    }

    /// Runs the probe for `names` in a shell with `flags`, then `getent hosts` for the first name.
    /// `resolverOptions` go to glibc as `RES_OPTIONS` (`timeout:1 attempts:1` bounds the wait
    /// for an answer that never comes; glibc's own 5 s × 2 otherwise). Returns the lookups,
    /// getent's exit status and the run.
    static func lookUp(_ names: [String], _ flags: [String], resolverOptions: String = "") async throws -> ([String: Lookup], getent: Int, WatchedProcess.Result) {
        let script = "python3 -c \"$1\" \(names.joined(separator: " ")); getent hosts \(names[0]); echo getent=$?"
        let result = try await WatchedProcess(ShellHarness.executable, ["shell"] + flags + ["--", "env", "RES_OPTIONS=\(resolverOptions)", "sh", "-c", script, "sh", probe])
            .result(within: .seconds(60))
        let line = try #require(result.standardOutput.split(separator: "\n").first { $0.hasPrefix("RESULT ") }, "\(result.standardOutput)\n\(result.standardError)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(line.dropFirst(7).utf8)) as? [String: [Any]])
        var lookups: [String: Lookup] = [:]
        for (name, pair) in json {
            let seconds = pair[1] as? Double ?? -1
            lookups[name] = (pair[0] as? [String]).map { Lookup(addresses: $0, eai: nil, seconds: seconds) }
                ?? Lookup(addresses: [], eai: pair[0] as? Int, seconds: seconds)
        }
        let getent = result.standardOutput.split(separator: "\n").first { $0.hasPrefix("getent=") }.flatMap { Int($0.dropFirst(7)) } ?? -1
        return (lookups, getent, result)
    }

    /// glibc's EAI_NONAME and EAI_AGAIN as Python reports them.
    static let noName = -2, again = -3

    @Test func aMappedNameResolvesToTheHostSideAfterTheDelayAndOthersGetNXDOMAIN() async throws {
        let events = ShellHarness.temporaryPath("events.jsonl")
        defer { try? FileManager.default.removeItem(atPath: events) }
        let (lookups, getent, result) = try await Self.lookUp(["example.test", "unknown.test"],
                                                              ["--dns", "example.test=host", "--dns-delay", "1s", "--events", events])
        #expect(result.status == 0, "\(result.standardError)")
        let mapped = try #require(lookups["example.test"])
        #expect(mapped.addresses.contains { PacketAddressPlan.contains(IPv4Address(text: $0) ?? IPv4Address(0)) }, "\(mapped) \(result.standardError)")
        // A and AAAA go out together and are each answered 1 s later; the load may add, never subtract.
        #expect(mapped.seconds >= 1.0 && mapped.seconds < 5, "lookup took \(mapped.seconds) s with a 1 s DNS delay")
        let unknown = try #require(lookups["unknown.test"])
        #expect(unknown.eai == Self.noName && unknown.seconds >= 1.0, "\(unknown) \(result.standardError)")
        #expect(getent == 0)
        let log = try String(contentsOfFile: events, encoding: .utf8)
        #expect(log.contains("\"event\":\"dns_query\",\"name\":\"example.test\",\"type\":\"A\",\"transport\":\"udp\""), "\(log)")
        #expect(log.contains("\"result\":\"NXDOMAIN\""), "\(log)")
        #expect(result.standardError.contains("NXDOMAIN"), "\(result.standardError)")
    }

    @Test func eachFailureIsWhatARealResolverSees() async throws {
        for (failure, eai, answered) in [("nxdomain", Self.noName, true), ("servfail", Self.again, true), ("timeout", Self.again, false)] {
            let stats = ShellHarness.temporaryPath("stats.json")
            defer { try? FileManager.default.removeItem(atPath: stats) }
            let (lookups, getent, result) = try await Self.lookUp(["example.test"], ["--dns", "example.test=host", "--dns-fail", failure, "--stats", stats],
                                                                  resolverOptions: "timeout:1 attempts:1")
            #expect(result.status == 0, "\(result.standardError)")
            let lookup = try #require(lookups["example.test"])
            #expect(lookup.eai == eai, "\(failure): \(lookup)")
            #expect(getent == 2, "\(failure): getent says the name was not found")
            let counters = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: stats))) as? [String: Any])
            let dns = try #require(counters["dns"] as? [String: Int])
            #expect(dns["queries"] ?? 0 >= 2, "\(failure): \(dns)")
            if answered {
                #expect(lookup.seconds < 1, "\(failure) answers at once: \(lookup)")
                #expect(dns[failure] == dns["queries"], "\(failure): \(dns)")
            } else {
                // No answer: glibc waits out its 1 s (RES_OPTIONS) and gives up.
                #expect(lookup.seconds >= 1 && lookup.seconds < 6, "\(lookup)")
                #expect(dns["unanswered"] == dns["queries"], "\(dns)")
            }
        }
    }

    @Test func queriesCrossTheLinkOverUDPAndOverTCP() async throws {
        // 100 ms each way, no DNS delay: a UDP lookup is one round trip (≥ 0.2 s); glibc told to
        // use TCP (`use-vc`) needs the handshake too (≥ 0.4 s), and the server answers on TCP.
        for (options, floor, transport) in [("", 0.2, "udp"), ("use-vc", 0.4, "tcp")] {
            let events = ShellHarness.temporaryPath("events.jsonl")
            defer { try? FileManager.default.removeItem(atPath: events) }
            let (lookups, _, result) = try await Self.lookUp(["example.test"], ["--latency", "100ms", "--dns", "example.test=host", "--events", events],
                                                              resolverOptions: options)
            #expect(result.status == 0, "\(result.standardError)")
            let lookup = try #require(lookups["example.test"])
            #expect(!lookup.addresses.isEmpty && lookup.seconds >= floor && lookup.seconds < 5, "\(transport): \(lookup)")
            let log = try String(contentsOfFile: events, encoding: .utf8)
            #expect(log.contains("\"transport\":\"\(transport)\""), "\(log)")
        }
    }

    @Test func anAddressOtherThanTheHostSidesIsRefusedWithTheReason() async throws {
        let result = try await ShellHarness.run(["--dns", "a.test=192.0.2.7", "--", "true"], timeout: .seconds(30))
        #expect(result.status == 64, "a usage error, as any bad flag")
        #expect(result.standardError.contains("delivers only to NETSIM_HOST"), "\(result.standardError)")
        #expect(result.standardError.contains("a.test=host"))
    }

    @Test func theHighLatencyDNSProfileDelaysLookupsByThreeSeconds() async throws {
        let (lookups, _, result) = try await Self.lookUp(["example.test"], ["--profile", "high-latency-dns", "--dns", "example.test=host"])
        #expect(result.status == 0, "\(result.standardError)")
        let lookup = try #require(lookups["example.test"])
        #expect(!lookup.addresses.isEmpty && lookup.seconds >= 3 && lookup.seconds < 8, "\(lookup)")
    }
}
