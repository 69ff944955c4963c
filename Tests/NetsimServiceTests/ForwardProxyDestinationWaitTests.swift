import Foundation
import NetsimCore
import NetsimFaults
import NetsimLoopback
import NetsimRelay
import NetsimService
import NetsimTLS
import Testing

/// While `netsim proxy` waits for a destination: `--connect-timeout` (a destination that never
/// answers gets the proxy's `504 Gateway Timeout` when the proxy says so, not NIO's 10 s and a
/// 502; an intercepted tunnel whose destination takes the connection and never answers TLS is
/// closed then, not at 127 s), and a client that ends its side meanwhile (let go after a grace,
/// or answered when the destination comes in time).
@Suite("Forward proxy: waiting for a destination")
struct ForwardProxyDestinationWaitTests {
    /// The proxy gave up on the destination at its 500 ms connect timeout: by its own clock when
    /// a relay took the connection (from its `opened` to its `upstream_failed`, both stamped on
    /// the event loop), else by curl's (`%{time_total}`). Not by the test's clock around curl:
    /// an await resumes on Swift's shared pool, which a test batch's first seconds keep busy
    /// (CI: "after 10 s", where the log said the timeout fired on time). NIO's own 10 s, or the
    /// relay's 127 s, would show in either.
    static func expectTheProxyWaitedItsTimeout(_ events: [Event], curlSeconds: Double, sourceLocation: SourceLocation = #_sourceLocation) {
        let failed = events.first { if case .upstreamFailed = $0.kind { true } else { false } }
        let opened = events.first { event in
            if case .opened = event.kind { event.connection != nil && event.connection == failed?.connection } else { false }
        }
        if let failed, let opened {
            let waited = Double(failed.time - opened.time) / 1e9
            #expect(waited >= 0.5 && waited < 3, "the proxy gave up after \(waited) s by its clock", sourceLocation: sourceLocation)
        }
        #expect(curlSeconds >= 0.5 && curlSeconds < 9, "curl was answered after \(curlSeconds) s", sourceLocation: sourceLocation)
    }

    /// curl's `%{time_total}`, which `-w` prints last.
    static func curlSeconds(_ output: String) -> Double {
        output.split(whereSeparator: \.isNewline).last.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) } ?? .infinity
    }

    @Test(arguments: [false, true])
    func aDestinationThatNeverAnswersGets504AtTheTimeout(tunnel: Bool) async throws {
        let silent = try UnansweredPort()
        let proxy = ForwardProxy(configuration: .init(connectTimeout: .milliseconds(500)), threads: 1)
        let endpoint = try await proxy.start()
        let curl = try await WatchedProcess(URL(fileURLWithPath: "/usr/bin/env"), [
            "curl", "-sS", "--max-time", "30", "-x", "http://\(endpoint)", "-w", tunnel ? "\n%{http_connect} %{time_total}" : "\n%{http_code} %{time_total}",
        ] + (tunnel ? ["-p"] : []) + ["http://\(silent.endpoint)/"]).result(within: .seconds(40))
        await proxy.stop()
        let lines = curl.standardOutput.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.last?.hasPrefix("504 ") == true, "\(curl.standardOutput) \(curl.standardError)")
        if !tunnel {
            #expect(lines.dropLast().joined().contains("cannot reach \(silent.endpoint): no answer to the connect within 500ms"), "\(lines)")
        }
        Self.expectTheProxyWaitedItsTimeout(proxy.eventLog.events, curlSeconds: Self.curlSeconds(curl.standardOutput))
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
        let curl = try await WatchedProcess(URL(fileURLWithPath: "/usr/bin/env"), [
            "curl", "-sS", "--max-time", "30", "-x", "http://\(endpoint)", "--cacert", caFile, "-o", "/dev/null", "-w", "\n%{time_total}",
            "https://localhost:\(server.endpoint.port)/",
        ]).result(within: .seconds(40))
        await proxy.stop()
        #expect(curl.status != 0 && curl.status != 28, "curl: \(curl.status) \(curl.standardError)")
        Self.expectTheProxyWaitedItsTimeout(proxy.eventLog.events, curlSeconds: Self.curlSeconds(curl.standardOutput))
        let kinds = proxy.eventLog.events.map(\.kind)
        #expect(kinds.contains { if case .upstreamFailed(.timeout, let detail) = $0 { detail.hasSuffix("no handshake within 500ms") } else { false } }, "\(kinds)")
    }

    /// A client that gives up while the proxy still connects (curl's `--max-time`) is let go, and
    /// the connect with it, as nginx and Squid do: it held its `--max-connections` place and the
    /// connect ran on to the timeout, and the log then had a 504 nobody was sent (QA 51).
    /// With a stand-in fault configured (`outage` later), the relay connects the destination, and
    /// lets the client go the same way (QA 53: it held the place to the connect timeout).
    @Test(arguments: [false, true])
    func aClientThatLeavesWhileTheProxyConnectsFreesItsPlace(standIn: Bool) async throws {
        let silent = try UnansweredPort()
        let lines = ForwardProxyTests.RequestLines()
        let live = try ForwardProxyTests.httpServer(recording: lines)
        defer { live.stop() }
        let faults = standIn ? [FaultRule(.outage(.serviceUnavailable), trigger: .at(.seconds(3600)))] : []
        let proxy = ForwardProxy(configuration: .init(faults: faults, maximumConnections: 1, connectTimeout: .seconds(60)), threads: 1)
        let endpoint = try await proxy.start()
        let seconds = try? await offload { () -> Double in
            let leaving = try BlockingSocket.connect(to: endpoint)
            try leaving.send("GET http://\(silent.endpoint)/ HTTP/1.1\r\nHost: \(silent.endpoint)\r\n\r\n")
            _ = try? leaving.receive(timeout: .milliseconds(300))  // nothing comes: the proxy still connects
            leaving.close()
            let start = ContinuousClock.now
            let answer = try ForwardProxyTests.get("/", on: live.endpoint, via: endpoint)
            #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer)")
            return (ContinuousClock.now - start) / .seconds(1)
        }
        await proxy.stop()
        let waited = try #require(seconds)
        #expect(waited < 30, "the next client waited \(waited) s for the place the one that left held")
        let kinds = proxy.eventLog.events.map(\.kind)
        #expect(kinds.contains(.upstreamFailed(reason: .other, detail: "\(silent.endpoint): the client closed its connection before the destination was reached; the connect was dropped")), "\(kinds)")
        #expect(!kinds.contains { if case .httpResponse(504, _, _, _) = $0 { true } else { false } }, "\(kinds)")
    }

    /// A client that ends its side with its request (`printf … | nc -N`, a tunnel's data and FIN
    /// in one burst) still gets its answer when the destination is reached within the grace:
    /// dropped at once, such a request never went (QA 53).
    @Test func aClientThatHalfClosesWithItsRequestIsAnswered() async throws {
        let lines = ForwardProxyTests.RequestLines()
        let live = try ForwardProxyTests.httpServer(recording: lines)
        defer { live.stop() }
        let proxy = ForwardProxy(configuration: .init(), threads: 1)
        let endpoint = try await proxy.start()
        let answer = try? await offload { () -> String in
            // The destination's relay is started first: a busy test run kept the task that starts
            // it queued for seconds, past the grace, which counts the wait for the destination.
            _ = try ForwardProxyTests.get("/first", on: live.endpoint, via: endpoint)
            return try ForwardProxyTests.get("/hc", on: live.endpoint, via: endpoint, version: "HTTP/1.0", halfClose: true)
        }
        await proxy.stop()
        #expect(answer?.hasPrefix("HTTP/1.1 200") == true, "\(answer ?? "no answer")")
        #expect(lines.all == ["GET /first HTTP/1.1", "GET /hc HTTP/1.0"], "\(lines.all)")
    }

    /// With a stand-in fault configured (`outage`, `portal`), the destination is connected by its
    /// relay; one that never answers closes the client at the timeout, as the proxy giving up,
    /// not leaving it silent until its own timeout (QA 51: curl waited its 10 s out). The log
    /// names the destination and upstream as the end's cause.
    @Test func aStandInProxyClosesTheClientAtTheConnectTimeout() async throws {
        let silent = try UnansweredPort()
        let outageLater = FaultRule(.outage(.serviceUnavailable), trigger: .at(.seconds(3600)))
        let proxy = ForwardProxy(configuration: .init(faults: [outageLater], connectTimeout: .milliseconds(500)), threads: 1)
        let endpoint = try await proxy.start()
        let curl = try await WatchedProcess(URL(fileURLWithPath: "/usr/bin/env"), [
            "curl", "-sS", "--max-time", "30", "-x", "http://\(endpoint)", "-w", "\n%{time_total}", "http://\(silent.endpoint)/",
        ]).result(within: .seconds(40))
        _ = await proxy.eventLog.waitFor(timeout: .seconds(10)) { if case .closed = $0.kind { true } else { false } }
        await proxy.stop()
        #expect(curl.status != 0 && curl.status != 28, "curl: \(curl.status) \(curl.standardError)")
        Self.expectTheProxyWaitedItsTimeout(proxy.eventLog.events, curlSeconds: Self.curlSeconds(curl.standardOutput))
        let kinds = proxy.eventLog.events.map(\.kind)
        #expect(kinds.contains(.upstreamFailed(reason: .timeout, detail: "\(silent.endpoint): connect timed out")), "\(kinds)")
        let closed = kinds.compactMap { if case .closed(let by, _, _, _) = $0 { by } else { nil } }
        #expect(closed == [.upstream], "\(kinds)")
    }
}
