import Foundation
import NetsimCore
import NetsimLink
import NetsimLoopback
import NetsimRelay
import Testing

/// HTTP observation and the `outage` fault, seen from a plain client socket.
@Suite("HTTP-aware relay", .serialized)
struct HTTPTests {
    /// Answers `GET /a` with 200 and a 5-byte body, anything else with 404 and a 9-byte body.
    static func httpServer() throws -> RecordingServer {
        try RecordingServer { chunk in
            let text = String(decoding: chunk, as: UTF8.self)
            guard text.hasSuffix("\r\n\r\n") else { return [] }
            return Array((text.hasPrefix("GET /a ")
                ? "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
                : "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found").utf8)
        }
    }

    static func request(_ path: String, method: String = "GET") -> String {
        "\(method) \(path) HTTP/1.1\r\nHost: example.test\r\n\r\n"
    }

    /// Reads until the bytes contain a full head and `body` more bytes after it.
    static func readResponse(_ socket: BlockingSocket, bodyLength: Int) throws -> String {
        var bytes: [UInt8] = []
        for _ in 0..<100 {
            let text = String(decoding: bytes, as: UTF8.self)
            if let end = text.range(of: "\r\n\r\n"), text.utf8.count - text.utf8.distance(from: text.startIndex, to: end.upperBound) >= bodyLength {
                return text
            }
            let chunk = try socket.receive(timeout: .seconds(5))
            if chunk.isEmpty { break }
            bytes += chunk
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func httpEvents(_ relay: Relay) -> [EventKind] {
        relay.eventLog.events.compactMap { event in
            switch event.kind {
            case .httpRequest, .httpResponse, .httpUnobserved: event.kind
            default: nil
            }
        }
    }

    @Test func keepAliveRequestsAreObservedInOrderWithReuse() async throws {
        let server = try Self.httpServer()
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint, observeHTTP: true) { relay, endpoint in
            let socket = try await offload { try BlockingSocket.connect(to: endpoint) }
            defer { socket.close() }
            let first = try await offload { () -> String in
                try socket.send(Self.request("/a"))
                return try Self.readResponse(socket, bodyLength: 5)
            }
            #expect(first.hasPrefix("HTTP/1.1 200 OK"))
            let second = try await offload { () -> String in
                try socket.send(Self.request("/b"))
                return try Self.readResponse(socket, bodyLength: 9)
            }
            #expect(second.hasPrefix("HTTP/1.1 404"))
            _ = await relay.eventLog.waitFor(timeout: .seconds(3)) { $0.kind == .httpResponse(status: 404, bytes: 9) }
            #expect(Self.httpEvents(relay) == [
                .httpRequest(method: "GET", path: "/a", reused: false),
                .httpResponse(status: 200, bytes: 5),
                .httpRequest(method: "GET", path: "/b", reused: true),
                .httpResponse(status: 404, bytes: 9),
            ])
            let connections = Set(relay.eventLog.events.filter { Self.httpEvents(relay).contains($0.kind) }.map(\.connection))
            #expect(connections == [ConnectionID(1)])
        }
    }

    @Test func aResponseToHeadHasNoBodyAndACloseDelimitedBodyEndsAtFIN() async throws {
        let server = try RecordingServer { chunk in
            let text = String(decoding: chunk, as: UTF8.self)
            return Array((text.hasPrefix("HEAD")
                ? "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"
                : "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end").utf8)
        }
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint, observeHTTP: true) { relay, endpoint in
            let received = try await offload { () -> String in
                let socket = try BlockingSocket.connect(to: endpoint)
                defer { socket.close() }
                try socket.send(Self.request("/h", method: "HEAD"))
                _ = try Self.readResponse(socket, bodyLength: 0)
                try socket.send(Self.request("/c"))
                socket.shutdownWrite()
                return String(decoding: try socket.receiveToEnd(timeout: .seconds(5)), as: UTF8.self)
            }
            #expect(received.hasSuffix("until the end"))
            _ = await relay.eventLog.waitFor(timeout: .seconds(3)) { $0.kind == .httpResponse(status: 200, bytes: 13) }
            #expect(Self.httpEvents(relay) == [
                .httpRequest(method: "HEAD", path: "/h", reused: false),
                .httpResponse(status: 200, bytes: 0),
                .httpRequest(method: "GET", path: "/c", reused: true),
                .httpResponse(status: 200, bytes: 13),
            ])
        }
    }

    @Test func aNonHTTPStreamPassesByteForByteAndStopsObservation() async throws {
        let server = try RecordingServer()  // echo
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint, observeHTTP: true) { relay, endpoint in
            let payload: [UInt8] = Array("hello, not http\n".utf8) + (0..<2000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let echoed = try await offload { () -> [UInt8] in
                let socket = try BlockingSocket.connect(to: endpoint)
                defer { socket.close() }
                try socket.send(payload)
                return try socket.receive(exactly: payload.count)
            }
            #expect(echoed == payload)
            #expect(await server.wait { $0.first?.received == payload })
            let events = Self.httpEvents(relay)
            #expect(events.count == 1)
            if case .httpUnobserved(let reason) = events.first {
                #expect(reason.hasPrefix("not HTTP"))
            } else {
                Issue.record("expected one httpUnobserved event, got \(events)")
            }
        }
    }

    /// Sends one raw request head through an observing relay, reads the 5-byte answer, and
    /// returns the relay's events.
    static func observe(_ head: String) async throws -> [Event] {
        let server = try Self.httpServer()
        defer { server.stop() }
        return try await withRelay(upstream: server.endpoint, observeHTTP: true) { relay, endpoint in
            _ = try await offload { () -> String in
                let socket = try BlockingSocket.connect(to: endpoint)
                defer { socket.close() }
                try socket.send(head)
                return try Self.readResponse(socket, bodyLength: 5)
            }
            return relay.eventLog.events
        }
    }

    static func firstRequest(_ events: [Event]) -> Event? {
        events.first { if case .httpRequest = $0.kind { true } else { false } }
    }

    @Test func theRequestTagHeaderIsLogged() async throws {
        let events = try await Self.observe("GET /a HTTP/1.1\r\nHost: example.test\r\nX-Netsim-Request: warm#2\r\n\r\n")
        #expect(Self.firstRequest(events)?.kind == .httpRequest(method: "GET", path: "/a", reused: false, tag: "warm#2"))
    }

    @Test func theRequestsVersionIsLoggedTyped() async throws {
        let events = try await Self.observe("GET /old HTTP/1.0\r\nHost: example.test\r\nConnection: keep-alive\r\n\r\n")
        let request = Self.firstRequest(events)
        #expect(request?.kind == .httpRequest(method: "GET", path: "/old", reused: false, version: .http1_0))
        #expect(request?.jsonLine.contains(#""version":"HTTP/1.0""#) == true, "\(request?.jsonLine ?? "none")")
    }

    @Test func observationIsOffByDefault() async throws {
        let server = try Self.httpServer()
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint) { relay, endpoint in
            let reply = try await offload { () -> String in
                let socket = try BlockingSocket.connect(to: endpoint)
                defer { socket.close() }
                try socket.send(Self.request("/a"))
                return try Self.readResponse(socket, bodyLength: 5)
            }
            #expect(reply.hasPrefix("HTTP/1.1 200"))
            #expect(Self.httpEvents(relay).isEmpty)
        }
    }

    // MARK: outage

    /// Sends one request to a relay in an outage of `kind` and returns what the socket got:
    /// the bytes, and how the read ended.
    static func outage(_ kind: OutageKind, method: String = "GET") async throws -> (text: String, ending: String, relayEvents: [Event], upstream: Int) {
        let server = try Self.httpServer()
        defer { server.stop() }
        return try await withRelay(upstream: server.endpoint, faults: [FaultRule(.outage(kind))]) { relay, endpoint in
            let closed = EventWaiter(log: relay.eventLog)
            let (bytes, ending) = try await offload { () -> ([UInt8], String) in
                let socket = try BlockingSocket.connect(to: endpoint)
                defer { socket.close() }
                try socket.send(Self.request("/a", method: method))
                var bytes: [UInt8] = []
                for _ in 0..<100 {
                    do {
                        let chunk = try socket.receive(timeout: .milliseconds(600))
                        if chunk.isEmpty { return (bytes, "eof") }
                        bytes += chunk
                    } catch let failure as SocketFailure {
                        return (bytes, failure == .timedOut ? "silence" : "\(failure)")
                    }
                }
                return (bytes, "too much")
            }
            // Everything the relay logs for the connection comes before its `closed` event.
            _ = await closed.first { if case .closed = $0.kind { true } else { false } }
            return (String(decoding: bytes, as: UTF8.self), ending, relay.eventLog.events, server.snapshot.count)
        }
    }

    static func header(_ name: String, in text: String) -> String? {
        let head = text.components(separatedBy: "\r\n\r\n").first ?? ""
        for line in head.components(separatedBy: "\r\n").dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == name.lowercased() { return parts[1].trimmingCharacters(in: .whitespaces) }
        }
        return nil
    }

    static func answered(_ events: [Event]) -> Int {
        events.filter { if case .faultFired("outage", let detail) = $0.kind { detail.hasPrefix("answered") || detail.hasPrefix("accepted") } else { false } }.count
    }

    @Test func outage503AnswersWithRetryAfterAndNeverConnectsUpstream() async throws {
        let result = try await Self.outage(.serviceUnavailable)
        #expect(result.text.hasPrefix("HTTP/1.1 503 Service Unavailable\r\n"))
        #expect(Self.header("Retry-After", in: result.text) == "2")
        let length = Int(Self.header("Content-Length", in: result.text) ?? "") ?? -1
        #expect(result.text.components(separatedBy: "\r\n\r\n").last?.utf8.count == length)
        #expect(result.ending == "silence", "the connection stays open (keep-alive)")
        #expect(result.upstream == 0, "upstream saw nothing")
        #expect(!result.relayEvents.contains { if case .upstreamConnected = $0.kind { true } else { false } })
        #expect(Self.answered(result.relayEvents) == 1)
    }

    @Test func outage500() async throws {
        let result = try await Self.outage(.internalError)
        #expect(result.text.hasPrefix("HTTP/1.1 500 Internal Server Error\r\n"))
        #expect(result.upstream == 0)
        #expect(Self.answered(result.relayEvents) == 1)
    }

    @Test func outageErrorPageLooksCacheableAndOld() async throws {
        let result = try await Self.outage(.errorPage)
        #expect(result.text.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(result.text.contains("<html>") && result.text.contains("Service unavailable") && result.text.contains("</html>"))
        #expect(Self.header("Cache-Control", in: result.text) == nil)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let lastModified = Self.header("Last-Modified", in: result.text).flatMap(formatter.date(from:))
        let date = Self.header("Date", in: result.text).flatMap(formatter.date(from:))
        #expect(lastModified != nil && date != nil)
        if let lastModified, let date {
            #expect(abs(date.timeIntervalSince(lastModified) - 365 * 86400) < 2)
            #expect(abs(date.timeIntervalSinceNow) < 60)
        }
        #expect(result.upstream == 0)
    }

    @Test func outageTruncatedStopsShortOfContentLengthThenFIN() async throws {
        let result = try await Self.outage(.truncated)
        #expect(result.text.hasPrefix("HTTP/1.1 200 OK\r\n"))
        let declared = Int(Self.header("Content-Length", in: result.text) ?? "") ?? 0
        let body = result.text.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
        #expect(declared == 1024)
        #expect(body.utf8.count > 0 && body.utf8.count < declared)
        #expect(result.ending == "eof")
        #expect(result.upstream == 0)
    }

    @Test func outageNoHeadersIsSilence() async throws {
        let result = try await Self.outage(.noHeaders)
        #expect(result.text.isEmpty)
        #expect(result.ending == "silence")
        #expect(result.upstream == 0)
        #expect(Self.answered(result.relayEvents) == 1)
    }

    @Test func outageOnAnOpenConnectionAnswersTheNextRequestAndLiftingRestoresUpstream() async throws {
        let server = try Self.httpServer()
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint) { relay, endpoint in
            let socket = try await offload { try BlockingSocket.connect(to: endpoint) }
            defer { socket.close() }
            let first = try await offload { () -> String in
                try socket.send(Self.request("/a"))
                return try Self.readResponse(socket, bodyLength: 5)
            }
            #expect(first.hasPrefix("HTTP/1.1 200"))
            let id = try await relay.addFault(FaultRule(.outage(.serviceUnavailable)))
            let during = try await offload { () -> String in
                try socket.send(Self.request("/a"))
                return try Self.readResponse(socket, bodyLength: 20)
            }
            #expect(during.hasPrefix("HTTP/1.1 503"))
            #expect(server.snapshot.first?.received.count == Self.request("/a").utf8.count, "the upstream saw only the first request")
            // The relay did not watch the first request as HTTP, but it went upstream: the
            // outage's is the connection's second (it was logged `reused: false`).
            #expect(relay.eventLog.events.map(\.kind).contains(.httpRequest(method: "GET", path: "/a", reused: true, answeredBy: "outage")), "\(relay.eventLog.events)")
            await relay.removeFault(id)
            // A new connection during no outage reaches upstream again.
            let after = try await offload { () -> String in
                let fresh = try BlockingSocket.connect(to: endpoint)
                defer { fresh.close() }
                try fresh.send(Self.request("/a"))
                return try Self.readResponse(fresh, bodyLength: 5)
            }
            #expect(after.hasPrefix("HTTP/1.1 200"))
        }
    }

    @Test func liftingAnOutageConnectsAConnectionThatNeverReachedUpstream() async throws {
        let server = try Self.httpServer()
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint) { relay, endpoint in
            let id = try await relay.addFault(FaultRule(.outage(.internalError)))
            let socket = try await offload { try BlockingSocket.connect(to: endpoint) }
            defer { socket.close() }
            let during = try await offload { () -> String in
                try socket.send(Self.request("/a"))
                return try Self.readResponse(socket, bodyLength: 22)
            }
            #expect(during.hasPrefix("HTTP/1.1 500"))
            #expect(server.snapshot.isEmpty)
            await relay.removeFault(id)
            let after = try await offload { () -> String in
                try socket.send(Self.request("/a"))
                return try Self.readResponse(socket, bodyLength: 5)
            }
            #expect(after.hasPrefix("HTTP/1.1 200"), "the same connection reaches upstream once the outage lifts")
            #expect(server.snapshot.count == 1)
        }
    }

    @Test func outageAnswersGoThroughDownstreamLatency() async throws {
        let server = try Self.httpServer()
        defer { server.stop() }
        let link = LinkConfiguration(up: DirectionLink(latency: .milliseconds(100)), down: DirectionLink(latency: .milliseconds(100)))
        try await withRelay(upstream: server.endpoint, link: link, faults: [FaultRule(.outage(.serviceUnavailable))]) { _, endpoint in
            let (text, seconds) = try await offload { () -> (String, Double) in
                let socket = try BlockingSocket.connect(to: endpoint)
                defer { socket.close() }
                let start = ContinuousClock.now
                try socket.send(Self.request("/a"))
                let text = try Self.readResponse(socket, bodyLength: 20)
                return (text, elapsed(since: start))
            }
            #expect(text.hasPrefix("HTTP/1.1 503"))
            #expect(seconds >= 0.19, "a round trip: up and down latency (\(seconds)s)")
            #expect(server.snapshot.isEmpty)
        }
    }

    @Test func outageParsesFromItsNames() throws {
        #expect(try FaultKind(parsing: "outage=503") == .outage(.serviceUnavailable))
        #expect(try FaultKind(parsing: "outage=no-headers") == .outage(.noHeaders))
        #expect(FaultKind.outage(.errorPage).description == "outage=error-page")
        #expect(throws: UnitParseError.self) { try FaultKind(parsing: "outage=404") }
        #expect(throws: UnitParseError.self) { try FaultKind(parsing: "outage") }
    }
}
