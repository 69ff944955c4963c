import Foundation
import NetsimCore
import NetsimLoopback
import NetsimRelay
import NetsimService
import NetsimTLS
import Testing

/// `netsim proxy --connect-timeout`: a destination that never answers gets the proxy's `504
/// Gateway Timeout` when the proxy says so, not NIO's 10 s and a 502; a tunnel intercepted to
/// a destination that takes the connection and never answers TLS is closed then, not at 127 s.
@Suite("Forward proxy: connect timeout")
struct ForwardProxyConnectTimeoutTests {
    @Test(arguments: [false, true])
    func aDestinationThatNeverAnswersGets504AtTheTimeout(tunnel: Bool) async throws {
        let silent = try UnansweredPort()
        let proxy = ForwardProxy(configuration: .init(connectTimeout: .milliseconds(500)), threads: 1)
        let endpoint = try await proxy.start()
        let start = ContinuousClock.now
        let curl = try await WatchedProcess(URL(fileURLWithPath: "/usr/bin/env"), [
            "curl", "-sS", "--max-time", "30", "-x", "http://\(endpoint)", "-w", tunnel ? "\n%{http_connect}" : "\n%{http_code}",
        ] + (tunnel ? ["-p"] : []) + ["http://\(silent.endpoint)/"]).result(within: .seconds(40))
        let seconds = (ContinuousClock.now - start) / .seconds(1)
        await proxy.stop()
        let lines = curl.standardOutput.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.last == "504", "\(curl.standardOutput) \(curl.standardError)")
        if !tunnel {
            #expect(lines.dropLast().joined().contains("cannot reach \(silent.endpoint): no answer to the connect within 500ms"), "\(lines)")
        }
        #expect(seconds >= 0.5 && seconds < 9, "the 504 came after \(seconds) s")
        let kinds = proxy.eventLog.events.map(\.kind)
        #expect(kinds.contains(.upstreamFailed(reason: .timeout, detail: "\(silent.endpoint): connect timed out")), "\(kinds)")
        #expect(kinds.contains { if case .httpResponse(504, _, "proxy", nil) = $0 { true } else { false } }, "\(kinds)")
    }

    /// The client holds a TLS session with netsim; the destination took the TCP connection and
    /// never answers the handshake. The proxy gives up at its connect timeout and closes the
    /// client (QA 50: it waited the relay's 127 s).
    @Test func anInterceptedTunnelToASilentDestinationIsClosedAtTheTimeout() async throws {
        let server = try LoopbackServer(threadPerConnection: false) { _ in }  // holds each connection, says nothing
        defer { server.stop() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-proxy-timeout-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let authority = try CertificateAuthority.ephemeral()
        let caFile = folder.appendingPathComponent("ca.pem").path
        try (try authority.pem).write(toFile: caFile, atomically: true, encoding: .utf8)
        let interception = try TLSInterception(authority: authority, upstreamTrust: .authority(authority), protocols: [.http1])
        let proxy = ForwardProxy(configuration: .init(interception: { @Sendable _ in interception }, connectTimeout: .milliseconds(500)), threads: 1)
        let endpoint = try await proxy.start()
        let start = ContinuousClock.now
        let curl = try await WatchedProcess(URL(fileURLWithPath: "/usr/bin/env"), [
            "curl", "-sS", "--max-time", "30", "-x", "http://\(endpoint)", "--cacert", caFile, "-o", "/dev/null",
            "https://localhost:\(server.endpoint.port)/",
        ]).result(within: .seconds(40))
        let seconds = (ContinuousClock.now - start) / .seconds(1)
        await proxy.stop()
        #expect(curl.status != 0 && curl.status != 28, "curl: \(curl.status) \(curl.standardError)")
        #expect(seconds >= 0.5 && seconds < 9, "the client was closed after \(seconds) s")
        let kinds = proxy.eventLog.events.map(\.kind)
        #expect(kinds.contains { if case .upstreamFailed(.timeout, let detail) = $0 { detail.hasSuffix("no handshake within 500ms") } else { false } }, "\(kinds)")
    }
}
