import Foundation
import NetsimCore
import NetsimHTTP
import NetsimLoopback
import NetsimRoutes
import NetsimService
import Testing

/// `netsim proxy --dns-delay / --dns-fail`: the proxy's own lookups of destination names, seen by
/// curl through the proxy.
@Suite("Forward proxy: DNS faults")
struct ForwardProxyDNSTests {
    /// curl through a proxy with `dns` to `url` (the built-in upstream's port filled in):
    /// status code (of the CONNECT with `connect`), body, seconds, and the proxy's events.
    static func curl(_ dns: DNSFaults, _ url: String, connect: Bool = false) async throws -> (code: String, body: String, seconds: Double, events: [EventKind]) {
        let server = BuiltinServer(routes: [HTTPRoute(path: "/hello", body: .text("hi"))])
        let upstream = try await server.start()
        let proxy = ForwardProxy(configuration: .init(dns: dns, dnsTimeout: .milliseconds(700)), threads: 1)
        let endpoint = try await proxy.start()
        let target = url.replacingOccurrences(of: "PORT", with: "\(upstream.port)")
        let start = ContinuousClock.now
        let curl = try await WatchedProcess(URL(fileURLWithPath: "/usr/bin/env"), [
            "curl", "-sS", "--max-time", "20", "-x", "http://\(endpoint)", "-w", connect ? "\n%{http_connect}" : "\n%{http_code}",
        ] + (connect ? ["-p"] : []) + [target]).result(within: .seconds(30))
        let seconds = (ContinuousClock.now - start) / .seconds(1)
        await proxy.stop()
        await server.stop()
        let lines = curl.standardOutput.split(separator: "\n", omittingEmptySubsequences: false)
        proxy.eventLog.flush()
        return (String(lines.last ?? ""), lines.dropLast().joined(separator: "\n"), seconds, proxy.eventLog.events.map(\.kind))
    }

    @Test func aDelayedLookupStillReachesTheSiteAfterTheDelay() async throws {
        let (code, body, seconds, events) = try await Self.curl(DNSFaults(delay: .seconds(1)), "http://localhost:PORT/hello")
        #expect(code == "200" && body == "hi")
        #expect(seconds >= 1 && seconds < 10, "took \(seconds) s with a 1 s DNS delay")
        #expect(events.contains(.dnsQuery(name: "localhost", type: "A/AAAA", transport: "proxy")))
        #expect(events.contains { if case .dnsAnswer("localhost", _, _, let after) = $0 { after >= 1_000_000_000 } else { false } })
    }

    @Test(arguments: [(DNSFailure.nxdomain, "502", "NXDOMAIN"), (.servfail, "502", "SERVFAIL"), (.timeout, "504", "no answer")])
    func aFailedLookupIsAnsweredAsARealProxyDoes(failure: DNSFailure, code: String, words: String) async throws {
        let (status, body, seconds, events) = try await Self.curl(DNSFaults(failure: failure), "http://localhost:PORT/hello")
        #expect(status == code, "\(body)")
        #expect(body.contains("cannot resolve localhost") && body.contains(words) && body.contains("--dns-fail \(failure.rawValue)"), "\(body)")
        #expect(events.contains { if case .dnsAnswer("localhost", _, let result, _) = $0 { result.contains(words) } else { false } })
        if failure == .timeout { #expect(seconds >= 0.7, "the proxy waits out its resolver timeout") }
        // A CONNECT tunnel fails the same way.
        let tunnel = try await Self.curl(DNSFaults(failure: failure), "http://localhost:PORT/hello", connect: true)
        #expect(tunnel.code == code)
    }

    @Test func addressLiteralsAreNeverLookedUp() async throws {
        let (code, _, _, events) = try await Self.curl(DNSFaults(failure: .nxdomain), "http://127.0.0.1:PORT/hello")
        #expect(code == "200")
        #expect(!events.contains { if case .dnsQuery = $0 { true } else { false } })
    }
}
