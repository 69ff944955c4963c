import Foundation
import NetsimCore
import NetsimLink
import NetsimLoopback
import NetsimRelay
import Testing
@testable import NetsimService

/// `netsim proxy --fault portal` / `--fault outage=…`: the relay answers plain HTTP itself, with
/// nothing resolved or connected upstream, and a portal breaks TLS inside CONNECT tunnels.
@Suite("Forward proxy with a portal or an outage")
struct ForwardProxyStandInTests {
    typealias H = HTTPTestSupport

    static func withProxy(_ faults: [FaultRule], link: LinkConfiguration = .unimpaired,
                          _ body: (ForwardProxy, Endpoint) async throws -> Void) async throws {
        let proxy = ForwardProxy(configuration: .init(link: link, faults: faults), threads: 1)
        let bound = try await proxy.start()
        do {
            try await body(proxy, bound)
        } catch {
            await proxy.stop()
            throw error
        }
        await proxy.stop()
    }

    @Test("Apple's probe through the proxy gets the portal's redirect without captive.apple.com being resolved, and is named in the log")
    func probeGetsThePortal() async throws {
        try await Self.withProxy([FaultRule(.portal(PortalSettings()))]) { proxy, bound in
            let response = try await offload { () -> H.Response in
                let socket = try BlockingSocket.connect(to: bound)
                defer { socket.close() }
                // What `curl -x http://PROXY http://captive.apple.com/hotspot-detect.html` sends.
                try socket.send("GET http://captive.apple.com/hotspot-detect.html HTTP/1.1\r\nHost: captive.apple.com\r\nUser-Agent: curl/8.5.0\r\nAccept: */*\r\nProxy-Connection: Keep-Alive\r\n\r\n")
                return try H.readResponse(socket, timeout: ForwardProxyTests.patience)
            }
            #expect(response.status == 302, "\(response.head)\n\(response.body)")
            #expect(response.header("Location") == "http://portal.netsim.test/login?continue=http%3A%2F%2Fcaptive.apple.com%2Fhotspot-detect.html")
            let details = proxy.eventLog.events.compactMap { event -> String? in
                if case .faultFired("portal", let detail) = event.kind { return detail }
                return nil
            }
            #expect(details.contains { $0.contains("Apple's captive-portal probe") && $0.contains("captive.apple.com") }, "\(details)")
            #expect(!proxy.eventLog.events.contains { if case .upstreamConnected = $0.kind { true } else { false } })

            // A name that can never resolve (RFC 6761) gets the same answer: nothing is looked up.
            let invalid = try await offload { () -> H.Response in
                let socket = try BlockingSocket.connect(to: bound)
                defer { socket.close() }
                try socket.send("GET http://never-resolves.invalid/ HTTP/1.1\r\nHost: never-resolves.invalid\r\n\r\n")
                return try H.readResponse(socket, timeout: ForwardProxyTests.patience)
            }
            #expect(invalid.status == 302, "\(invalid.head)\n\(invalid.body)")
        }
    }

    @Test("the page answer also serves a request with no Host header (the proxy adds it)")
    func pageAnswer() async throws {
        try await Self.withProxy([FaultRule(.portal(PortalSettings(answer: .page)))]) { _, bound in
            let response = try await offload { () -> H.Response in
                let socket = try BlockingSocket.connect(to: bound)
                defer { socket.close() }
                try socket.send("GET http://connectivitycheck.gstatic.com/generate_204 HTTP/1.1\r\n\r\n")
                return try H.readResponse(socket, timeout: ForwardProxyTests.patience)
            }
            #expect(response.status == 200, "\(response.head)")
            #expect(response.body.contains("<form"), "\(response.body)")
        }
    }

    @Test("a CONNECT tunnel through the portal is established, and the ClientHello in it is reset")
    func connectThroughPortal() async throws {
        try await Self.withProxy([FaultRule(.portal(PortalSettings()))]) { proxy, bound in
            let (head, outcome) = try await offload { () -> (String, Result<[UInt8], SocketFailure>) in
                let socket = try BlockingSocket.connect(to: bound)
                defer { socket.close() }
                try socket.send("CONNECT bank.example.test:443 HTTP/1.1\r\nHost: bank.example.test:443\r\n\r\n")
                let head = String(decoding: try socket.receive(timeout: ForwardProxyTests.patience), as: UTF8.self)
                try socket.send([0x16, 0x03, 0x01, 0x00, 0x2a, 0x01, 0x00, 0x00, 0x26, 0x03, 0x03] + [UInt8](repeating: 7, count: 32))
                do { return (head, .success(try socket.receive(timeout: ForwardProxyTests.patience))) } catch let failure as SocketFailure { return (head, .failure(failure)) }
            }
            #expect(head.hasPrefix("HTTP/1.1 200"), "\(head)")
            #expect(outcome == .failure(.reset), "\(outcome)")
            let details = proxy.eventLog.events.compactMap { event -> String? in
                if case .faultFired("portal", let detail) = event.kind { return detail }
                return nil
            }
            #expect(details.contains { $0.contains("broke a TLS ClientHello") }, "\(details)")
        }
    }

    @Test("outage=503: plain HTTP gets 503 with Retry-After over the link; the upstream never sees the request")
    func outage() async throws {
        let upstream = try H.Upstream()
        defer { upstream.stop() }
        let link = LinkConfiguration(both: DirectionLink(latency: .milliseconds(100)))
        try await Self.withProxy([FaultRule(.outage(.serviceUnavailable))], link: link) { _, bound in
            let (response, seconds) = try await offload { () -> (H.Response, Double) in
                let socket = try BlockingSocket.connect(to: bound)
                defer { socket.close() }
                let start = ContinuousClock.now
                try socket.send("GET http://\(upstream.endpoint)/api HTTP/1.1\r\nHost: \(upstream.endpoint)\r\n\r\n")
                let response = try H.readResponse(socket, timeout: ForwardProxyTests.patience)
                return (response, (ContinuousClock.now - start) / .seconds(1))
            }
            #expect(response.status == 503, "\(response.head)")
            #expect(response.header("Retry-After") == "2")
            #expect(seconds >= 0.19, "the answer crossed the link both ways: \(seconds) s")
            #expect(upstream.requests == 0)
        }
    }

    @Test("during an outage a CONNECT tunnel's TLS bytes are not HTTP: the relay closes the tunnel as a server would")
    func connectDuringOutage() async throws {
        try await Self.withProxy([FaultRule(.outage(.serviceUnavailable))]) { _, bound in
            let (head, outcome) = try await offload { () -> (String, Result<[UInt8], SocketFailure>) in
                let socket = try BlockingSocket.connect(to: bound)
                defer { socket.close() }
                try socket.send("CONNECT api.example.test:443 HTTP/1.1\r\nHost: api.example.test:443\r\n\r\n")
                let head = String(decoding: try socket.receive(timeout: ForwardProxyTests.patience), as: UTF8.self)
                try socket.send([0x16, 0x03, 0x01, 0x00, 0x2a, 0x01, 0x00, 0x00, 0x26, 0x03, 0x03] + [UInt8](repeating: 7, count: 32))
                do { return (head, .success(try socket.receiveToEnd(timeout: ForwardProxyTests.patience))) } catch let failure as SocketFailure { return (head, .failure(failure)) }
            }
            #expect(head.hasPrefix("HTTP/1.1 200"), "\(head)")
            #expect(outcome == .success([]), "a FIN and nothing else: \(outcome)")
        }
    }

    @Test("connections the outage does not pick reach the loopback upstream, connected only then")
    func unaffectedConnectionsReachTheUpstream() async throws {
        let upstream = try H.Upstream()
        defer { upstream.stop() }
        try await Self.withProxy([FaultRule(.outage(.serviceUnavailable), probability: .zero)]) { _, bound in
            let response = try await offload { () -> H.Response in
                let socket = try BlockingSocket.connect(to: bound)
                defer { socket.close() }
                try socket.send("GET http://\(upstream.endpoint)/api HTTP/1.1\r\nHost: \(upstream.endpoint)\r\nProxy-Connection: keep-alive\r\n\r\n")
                return try H.readResponse(socket, timeout: ForwardProxyTests.patience)
            }
            #expect(response.status == 200 && response.body == "upstream", "\(response.head)")
            #expect(upstream.requests == 1)
        }
    }
}
