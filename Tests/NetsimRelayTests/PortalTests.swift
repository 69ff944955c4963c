import Foundation
import NetsimCore
import NetsimLink
import NetsimLoopback
import NetsimRelay
import Testing

/// The `portal` fault (a captive portal), seen from plain client sockets.
@Suite("Captive portal", .serialized)
struct PortalTests {
    static func request(_ path: String, host: String, method: String = "GET") -> String {
        "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\nUser-Agent: test\r\n\r\n"
    }

    /// Reads one response (Content-Length framed) from `socket`.
    static func response(_ socket: BlockingSocket) throws -> (head: String, body: String) {
        var bytes: [UInt8] = []
        while true {
            let text = String(decoding: bytes, as: UTF8.self)
            if let end = text.range(of: "\r\n\r\n") {
                let head = String(text[..<end.lowerBound])
                let length = Int(HTTPTests.header("Content-Length", in: text) ?? "0") ?? 0
                let bodyBytes = Array(bytes.dropFirst(text.utf8.distance(from: text.startIndex, to: end.upperBound)))
                if bodyBytes.count >= length { return (head, String(decoding: bodyBytes.prefix(length), as: UTF8.self)) }
            }
            let chunk = try socket.receive(timeout: .seconds(5))
            if chunk.isEmpty { throw SocketFailure.other(errno: 0) }
            bytes += chunk
        }
    }

    /// Sends each request on one keep-alive connection through a relay with `portal`.
    static func exchange(_ settings: PortalSettings, _ requests: [String]) async throws -> (answers: [(head: String, body: String)], events: [Event], upstreamConnections: Int) {
        let server = try HTTPTests.httpServer()
        defer { server.stop() }
        return try await withRelay(upstream: server.endpoint, faults: [FaultRule(.portal(settings))]) { relay, endpoint in
            let answers = try await offload { () -> [(head: String, body: String)] in
                let socket = try BlockingSocket.connect(to: endpoint)
                defer { socket.close() }
                return try requests.map { request in
                    try socket.send(request)
                    return try Self.response(socket)
                }
            }
            return (answers, relay.eventLog.events, server.snapshot.count)
        }
    }

    static func fired(_ events: [Event]) -> [String] {
        events.compactMap { if case .faultFired("portal", let detail) = $0.kind { detail } else { nil } }
    }

    /// A page of `Fixtures/portal/`: the compiled-in pages must be these files, byte for byte.
    static func fixture(_ name: String) -> String {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Fixtures/portal/\(name)")
        return (try? String(contentsOf: file, encoding: .utf8)) ?? "missing Fixtures/portal/\(name)"
    }

    static let loginPage = fixture("login.html")

    @Test func redirectModeSendsPlainHTTPToTheLoginPageAndNeverUpstream() async throws {
        let result = try await Self.exchange(PortalSettings(answer: .redirect), [
            Self.request("/api/profile?id=7", host: "api.example.test:8080"),
            Self.request("/login?continue=x", host: PortalSettings.loginHost),
            Self.request("/login", host: PortalSettings.loginHost, method: "POST").replacingOccurrences(of: "\r\n\r\n", with: "\r\nContent-Length: 4\r\n\r\nroom"),
        ])
        let redirect = result.answers[0]
        #expect(redirect.head.hasPrefix("HTTP/1.1 302 Found"))
        #expect(HTTPTests.header("Location", in: redirect.head + "\r\n\r\n")
            == "http://portal.netsim.test/login?continue=http%3A%2F%2Fapi.example.test%3A8080%2Fapi%2Fprofile%3Fid%3D7",
            "the URL asked for, port and query included")
        #expect(result.answers[1].head.hasPrefix("HTTP/1.1 200 OK"))
        #expect(result.answers[1].body == Self.loginPage, "the login URL serves Fixtures/portal/login.html")
        #expect(result.answers[2].body == Self.fixture("login-accepted.html"), "a form POST gets Fixtures/portal/login-accepted.html")
        #expect(result.upstreamConnections == 0)
        let http = result.events.compactMap { event -> EventKind? in
            switch event.kind {
            case .httpRequest, .httpResponse: event.kind
            default: nil
            }
        }
        #expect(http == [
            .httpRequest(method: "GET", path: "/api/profile?id=7", reused: false, answeredBy: "portal"),
            .httpResponse(status: 302, bytes: redirect.body.utf8.count, answeredBy: "portal"),
            .httpRequest(method: "GET", path: "/login?continue=x", reused: true, answeredBy: "portal"),
            .httpResponse(status: 200, bytes: Self.loginPage.utf8.count, answeredBy: "portal"),
            .httpRequest(method: "POST", path: "/login", reused: true, answeredBy: "portal"),
            .httpResponse(status: 200, bytes: Self.fixture("login-accepted.html").utf8.count, answeredBy: "portal"),
        ])
    }

    @Test func pageModeAnswersEveryRequestWithTheLoginPage() async throws {
        let result = try await Self.exchange(PortalSettings(answer: .page), [Self.request("/news.json", host: "api.example.test")])
        #expect(result.answers[0].head.hasPrefix("HTTP/1.1 200 OK"))
        #expect(HTTPTests.header("Content-Type", in: result.answers[0].head + "\r\n\r\n") == "text/html; charset=utf-8")
        #expect(HTTPTests.header("Cache-Control", in: result.answers[0].head + "\r\n\r\n") == nil)
        #expect(result.answers[0].body == Self.loginPage)
        #expect(result.upstreamConnections == 0)
    }

    @Test func theFourConnectivityProbesAreInterceptedAndNamed() async throws {
        let probes = [
            ("captive.apple.com", "/hotspot-detect.html", "Apple"),
            ("connectivitycheck.gstatic.com", "/generate_204", "Android/Chromium"),
            ("detectportal.firefox.com", "/canonical.html", "Firefox"),
            ("www.msftconnecttest.com", "/connecttest.txt", "Windows"),
        ]
        for answer in PortalSettings.Answer.allCases {
            let result = try await Self.exchange(PortalSettings(answer: answer), probes.map { Self.request($0.1, host: $0.0) })
            for ((host, _, who), reply) in zip(probes, result.answers) {
                // What the OS expects from an open network is exactly what it does not get.
                #expect(!reply.head.hasPrefix("HTTP/1.1 204"), "\(host)")
                #expect(!reply.body.contains("Success") && reply.body != "success\n" && reply.body != "Microsoft Connect Test")
                #expect(reply.head.hasPrefix(answer == .redirect ? "HTTP/1.1 302" : "HTTP/1.1 200"))
                #expect(Self.fired(result.events).contains { $0.contains(who) && $0.contains(host) }, "\(who) probe named in the log")
            }
            #expect(result.upstreamConnections == 0)
        }
    }

    @Test func aRequestAskingToCloseGetsConnectionCloseAndAFIN() async throws {
        let server = try HTTPTests.httpServer()
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint, faults: [FaultRule(.portal(PortalSettings()))]) { _, endpoint in
            let text = try await offload { () -> String in
                let socket = try BlockingSocket.connect(to: endpoint)
                defer { socket.close() }
                try socket.send("GET /a HTTP/1.1\r\nHost: example.test\r\nConnection: close\r\n\r\n")
                return String(decoding: try socket.receiveToEnd(timeout: .seconds(5)), as: UTF8.self)
            }
            #expect(text.hasPrefix("HTTP/1.1 302"))
            #expect(HTTPTests.header("Connection", in: text) == "close")
            #expect(text.hasSuffix("</html>\n"), "the whole answer, then EOF")
        }
    }

    @Test func anAbsoluteFormRequestIsJudgedByItsURL() async throws {
        let result = try await Self.exchange(PortalSettings(), ["GET http://captive.apple.com/hotspot-detect.html HTTP/1.1\r\nHost: captive.apple.com\r\n\r\n"])
        #expect(result.answers[0].head.hasPrefix("HTTP/1.1 302"))
        #expect(Self.fired(result.events).contains { $0.contains("Apple") })
    }

    // MARK: TLS

    /// A minimal TLS 1.2 ClientHello with an SNI extension.
    static func clientHello(serverName: String) -> [UInt8] {
        let name = Array(serverName.utf8)
        func u16(_ n: Int) -> [UInt8] { [UInt8(n >> 8), UInt8(n & 0xFF)] }
        let sni = u16(0) + u16(name.count + 5) + u16(name.count + 3) + [0] + u16(name.count) + name
        let body = [0x03, 0x03] + [UInt8](repeating: 7, count: 32) + [0] + u16(2) + [0x13, 0x01] + [1, 0] + u16(sni.count) + sni
        let handshake = [0x01, 0, UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
        return [0x16, 0x03, 0x01] + u16(handshake.count) + handshake
    }

    /// What a TLS client sees through the portal: `reset`, `eof` or `silence`.
    static func tlsEnding(_ how: PortalSettings.Break) async throws -> (ending: String, events: [Event]) {
        let server = try RecordingServer()
        defer { server.stop() }
        return try await withRelay(upstream: server.endpoint, faults: [FaultRule(.portal(PortalSettings(tls: how)))]) { relay, endpoint in
            let ending = try await offload { () -> String in
                let socket = try BlockingSocket.connect(to: endpoint)
                defer { socket.close() }
                try socket.send(Self.clientHello(serverName: "api.example.com"))
                do {
                    let chunk = try socket.receive(timeout: .milliseconds(800))
                    return chunk.isEmpty ? "eof" : "data"
                } catch SocketFailure.reset {
                    return "reset"
                } catch SocketFailure.timedOut {
                    return "silence"
                }
            }
            #expect(server.snapshot.isEmpty, "nothing reached upstream")
            return (ending, relay.eventLog.events)
        }
    }

    @Test(arguments: [(PortalSettings.Break.reset, "reset"), (.close, "eof"), (.hang, "silence")])
    func tlsIsBrokenAsConfigured(_ how: PortalSettings.Break, _ expected: String) async throws {
        let result = try await Self.tlsEnding(how)
        #expect(result.ending == expected)
        #expect(Self.fired(result.events).contains { $0.contains("TLS ClientHello for api.example.com") })
    }

    /// The portal's reset crosses the link as its answers do: a fresh connection's ClientHello
    /// reaches it after the handshake and the up latency, and the RST comes back after the
    /// down latency, two round trips after the connect. It came at once.
    @Test func theResetOfAClientHelloTakesTheLinksRoundTrips() async throws {
        let server = try RecordingServer()
        defer { server.stop() }
        let link = LinkConfiguration(both: DirectionLink(latency: .milliseconds(100)))
        let seconds = try await withRelay(upstream: server.endpoint, link: link, faults: [FaultRule(.portal(PortalSettings(tls: .reset)))]) { _, endpoint in
            try await offload { () -> Double in
                let started = ContinuousClock.now
                let socket = try BlockingSocket.connect(to: endpoint)
                defer { socket.close() }
                try socket.send(Self.clientHello(serverName: "api.example.com"))
                _ = try? socket.receiveToEnd(timeout: .seconds(30))  // the reset
                return (ContinuousClock.now - started) / .seconds(1)
            }
        }
        #expect(seconds >= 0.39 && seconds < 30, "the reset came \(seconds) s after the connect")
    }

    // MARK: login

    @Test func loginLiftsThePortalForOpenAndNewConnections() async throws {
        let server = try HTTPTests.httpServer()
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint) { relay, endpoint in
            try await relay.addFault(FaultRule(.portal(PortalSettings())))
            let socket = try await offload { try BlockingSocket.connect(to: endpoint) }
            defer { socket.close() }
            let during = try await offload { () -> String in
                try socket.send(Self.request("/a", host: "example.test"))
                return try Self.response(socket).head
            }
            #expect(during.hasPrefix("HTTP/1.1 302"))
            #expect(server.snapshot.isEmpty)
            #expect(await relay.login() == 1)
            #expect(await relay.login() == 0, "nothing left to log in to")
            let sameConnection = try await offload { () -> (head: String, body: String) in
                try socket.send(Self.request("/a", host: "example.test"))
                return try Self.response(socket)
            }
            #expect(sameConnection.head.hasPrefix("HTTP/1.1 200") && sameConnection.body == "hello")
            let hello = Self.clientHello(serverName: "api.example.com")
            let fresh = try await offload { try BlockingSocket.connect(to: endpoint) }
            defer { fresh.close() }
            try await offload { try fresh.send(hello) }
            #expect(await server.wait { $0.count == 2 && $0[1].received == hello }, "after login a ClientHello reaches upstream")
        }
    }

    /// curl sends `/p?q=ü` as typed, raw UTF-8; nginx-style servers take it. The portal answers
    /// it as HTTP (it took it for "not HTTP" and, with `tls=hang`, never answered).
    @Test func aRequestWithRawUTF8InItsTargetGetsThePortal() async throws {
        let result = try await Self.exchange(PortalSettings(answer: .redirect, tls: .hang), [
            Self.request("/p?q=ü", host: "api.example.test"),
            Self.request("/after", host: "api.example.test"),
        ])
        #expect(result.answers.count == 2, "\(result.answers)")
        #expect(result.answers.first?.head.hasPrefix("HTTP/1.1 302 Found") == true, "\(result.answers)")
        #expect(HTTPTests.header("Location", in: (result.answers.first?.head ?? "") + "\r\n\r\n")?
            .hasSuffix("continue=http%3A%2F%2Fapi.example.test%2Fp%3Fq%3D%25C3%25BC") == true, "\(result.answers)")
        #expect(result.upstreamConnections == 0)
    }

    @Test func portalParsesFromItsForms() throws {
        #expect(try FaultKind(parsing: "portal") == .portal(PortalSettings(answer: .redirect, tls: .reset)))
        #expect(try FaultKind(parsing: "portal=page") == .portal(PortalSettings(answer: .page)))
        #expect(try FaultKind(parsing: "portal=redirect,tls=close") == .portal(PortalSettings(answer: .redirect, tls: .close)))
        #expect(try FaultKind(parsing: "portal=tls=hang") == .portal(PortalSettings(tls: .hang)))
        // The documented form, `portal[=redirect|page][,tls=…]`, without the first part.
        #expect(try FaultKind(parsing: "portal,tls=hang") == .portal(PortalSettings(tls: .hang)))
        #expect(try FaultKind(parsing: "cut=1KB,rst") == FaultKind(parsing: "cut=1KB,rst"))
        #expect(FaultKind.portal(PortalSettings(answer: .page, tls: .hang)).description == "portal=page,tls=hang")
        for bad in ["portal=login", "portal=page,page", "portal=tls=drop", "portal=page,", "portal,", "portal,page", "stale,rst"] {
            #expect(throws: UnitParseError.self, "\(bad)") { try FaultKind(parsing: bad) }
        }
    }
}
