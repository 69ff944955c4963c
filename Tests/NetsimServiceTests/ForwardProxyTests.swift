import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NetsimCore
import NetsimLink
import NetsimLoopback
import NetsimRelay
import Testing
@testable import NetsimService

/// The forward proxy carries plain HTTP and CONNECT tunnels through the link model.
@Suite("Forward proxy")
struct ForwardProxyTests {
    /// 100 ms each way: a request/response round trip takes at least 200 ms.
    static let link = LinkConfiguration(both: DirectionLink(latency: .milliseconds(100)))

    /// How long a client or server here waits for the other side; only a hang takes this long.
    /// The first connection to a destination waits for its relay to start in a task, and at the
    /// start of the suite Swift Testing's two-thread pool is queued with every test's first part:
    /// under CI load the first answers came at 15 s, past the 10 s this used to be (2026-11-25).
    static let patience: Duration = .seconds(45)

    /// Answers one HTTP request with `ok`, after recording its request line.
    final class RequestLines: @unchecked Sendable {
        private let lock = NSLock()
        private var lines: [String] = []
        func add(_ line: String) { lock.withLock { lines.append(line) } }
        var all: [String] { lock.withLock { lines } }
    }

    static func httpServer(recording lines: RequestLines) throws -> LoopbackServer {
        try LoopbackServer { socket in
            var received: [UInt8] = []
            while !String(decoding: received, as: UTF8.self).contains("\r\n\r\n") {
                guard let chunk = try? socket.receive(timeout: Self.patience), !chunk.isEmpty else { return }
                received += chunk
            }
            lines.add(String(String(decoding: received, as: UTF8.self).split(separator: "\r\n").first ?? ""))
            try? socket.send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
            socket.shutdownWrite()
            _ = try? socket.receiveToEnd(timeout: .seconds(5))
        }
    }

    /// A GET for `path` on `server`, in absolute form through the proxy at `proxy`, and the
    /// answer as text; `halfClose` ends the client's side with the request (`nc -N`). Blocking:
    /// call it in `offload`.
    static func get(_ path: String, on server: Endpoint, via proxy: Endpoint, version: String = "HTTP/1.1", halfClose: Bool = false) throws -> String {
        let socket = try BlockingSocket.connect(to: proxy)
        defer { socket.close() }
        try socket.send("GET http://\(server)\(path) \(version)\r\nHost: \(server)\r\n\r\n")
        if halfClose { socket.shutdownWrite() }
        return String(decoding: try socket.receiveToEnd(timeout: patience), as: UTF8.self)
    }

    @Test("plain HTTP in absolute form reaches the server in origin form, with the latency")
    func plainHTTP() async throws {
        let lines = RequestLines()
        let server = try Self.httpServer(recording: lines)
        let proxy = ForwardProxy(configuration: .init(link: Self.link), threads: 1)
        let bound = try await proxy.start()
        let result = try? await offload { () -> (String, Double) in
            let socket = try BlockingSocket.connect(to: bound)
            let start = ContinuousClock.now
            try socket.send("GET http://\(server.endpoint)/hello?x=1 HTTP/1.1\r\nHost: \(server.endpoint)\r\nProxy-Connection: keep-alive\r\n\r\n")
            let response = try socket.receiveToEnd(timeout: Self.patience)
            let elapsed = (ContinuousClock.now - start) / .seconds(1)
            socket.close()
            return (String(decoding: response, as: UTF8.self), elapsed)
        }
        await proxy.stop()
        server.stop()
        let (response, seconds) = try #require(result)
        #expect(response.hasPrefix("HTTP/1.1 200 OK"))
        #expect(response.hasSuffix("ok"))
        #expect(lines.all == ["GET /hello?x=1 HTTP/1.1"])
        #expect(seconds >= 0.19 && seconds < Self.patience / .seconds(1), "round trip took \(seconds) s")
        // Observed as through `netsim run` (QA 57: only intercepted tunnels were).
        let http = proxy.eventLog.events.compactMap { event -> String? in
            switch event.kind {
            case .httpRequest(let method, let path, _, _, _, _, _): "\(method) \(path)"
            case .httpResponse(let status, _, _, _): "\(status)"
            default: nil
            }
        }
        #expect(http == ["GET /hello?x=1", "200"], "\(proxy.eventLog.events.map(\.kind))")
    }

    /// The headers a request's `Connection` names are hop-by-hop, and not forwarded (QA 36:
    /// `X-Foo` reached the server), but the body's framing is kept whatever it says.
    @Test func theHeadersConnectionNamesAreNotForwarded() {
        let lines = ["Host: a.test", "Connection: keep-alive, X-Foo ,Transfer-Encoding", "X-Foo: 1", "Transfer-Encoding: chunked"]
        #expect(ProxyRequestHandler.hopByHop(lines) == ["connection", "proxy-connection", "keep-alive", "proxy-authorization", "x-foo"])
        #expect(ProxyRequestHandler.hopByHop(["Host: a.test"]) == ["connection", "proxy-connection", "keep-alive", "proxy-authorization"])
    }

    /// The server answers and closes first; the client closes once it has the answer. Its FIN
    /// reaches the server one latency later, and the connection ends with FIN. The proxy used to
    /// close the server's socket the moment the client's closed, so the delayed FIN was lost and
    /// the log said `half_closed` by the server only, then `closed` with `rst`.
    @Test("closes pass through with the latency and the connection ends with FIN")
    func closesPassThrough() async throws {
        let server = try Self.httpServer(recording: RequestLines())
        let proxy = ForwardProxy(configuration: .init(link: Self.link), threads: 1)
        let bound = try await proxy.start()
        _ = try? await offload {
            let socket = try BlockingSocket.connect(to: bound)
            try socket.send("GET http://\(server.endpoint)/ HTTP/1.1\r\nHost: \(server.endpoint)\r\n\r\n")
            _ = try socket.receiveToEnd(timeout: Self.patience)
            socket.close()
        }
        _ = await proxy.eventLog.waitFor(timeout: Self.patience) { if case .closed = $0.kind { true } else { false } }
        let events = proxy.eventLog.events
        await proxy.stop()
        server.stop()
        let halfClosed = events.compactMap { event -> (Side, Int64)? in
            if case .halfClosed(let by) = event.kind { (by, event.time) } else { nil }
        }
        #expect(halfClosed.map(\.0) == [.upstream, .client], "\(events.map(\.kind))")
        if halfClosed.count == 2 {
            #expect(halfClosed[1].1 - halfClosed[0].1 >= 95_000_000, "the client's FIN waits out the up latency")
        }
        let closed = events.compactMap { event -> (Side, CloseKind)? in
            if case .closed(let by, let how, _, _) = event.kind { (by, how) } else { nil }
        }
        #expect(closed.count == 1 && closed.first?.0 == .upstream && closed.first?.1 == .fin, "\(closed)")
    }

    @Test("a proxied connection holds two sockets: the relay adopts the client's own and listens on nothing")
    func twoSocketsPerConnection() async throws {
        let lines = RequestLines()
        let server = try Self.httpServer(recording: lines)
        let proxy = ForwardProxy(configuration: .init(), threads: 1)
        let bound = try await proxy.start()
        // The client's failure is kept (not `try?`) so a failing run names it.
        let clientPort: Result<Int, any Error>
        do {
            clientPort = .success(try await offload { () -> Int in
                let socket = try BlockingSocket.connect(to: bound)
                defer { socket.close() }
                try socket.send("GET http://\(server.endpoint)/ HTTP/1.1\r\nHost: \(server.endpoint)\r\n\r\n")
                _ = try socket.receiveToEnd(timeout: Self.patience)
                return socket.localPort
            })
        } catch {
            clientPort = .failure(error)
        }
        let relay = try await proxy.relay(to: server.endpoint)
        let opened = relay.eventLog.events.compactMap { event -> Int? in
            if case .opened(let client) = event.kind { client?.port ?? 0 } else { nil }
        }
        await proxy.stop()
        server.stop()
        let port = try clientPort.get()
        #expect(relay.endpoint == nil, "the destination's relay has no listener of its own")
        #expect(opened.count == 1)
        #expect(opened.first == port, "the relay's client leg is the client's socket (\(opened), client port \(port))")
    }

    /// A CONNECT costs what it costs through a real proxy: the 200 comes two round trips after
    /// the connect (the handshake's and the CONNECT's), and the tunnel's first bytes pay one
    /// round trip more, not the handshake again. Before, the 200 came at once.
    @Test("a CONNECT tunnel carries bytes both ways with the latency")
    func connectTunnel() async throws {
        let echo = try LoopbackServer.echo()
        let rtt = 0.5
        let proxy = ForwardProxy(configuration: .init(link: LinkConfiguration(both: DirectionLink(latency: .milliseconds(250)))), threads: 1)
        let bound = try await proxy.start()
        #expect(proxy.startedRelay(to: echo.endpoint, tunnel: true) == nil)
        let relay = try await proxy.relay(to: echo.endpoint, tunnel: true)  // started, so its start is not timed
        // Taken on the connection's loop from now on, awaiting nothing; plain HTTP has its own.
        #expect(proxy.startedRelay(to: echo.endpoint, tunnel: true) === relay)
        #expect(proxy.startedRelay(to: echo.endpoint, tunnel: false) == nil)
        let result = try? await offload { () -> (String, [UInt8], Double, Double) in
            let connected = ContinuousClock.now
            let socket = try BlockingSocket.connect(to: bound)
            try socket.send("CONNECT \(echo.endpoint) HTTP/1.1\r\nHost: \(echo.endpoint)\r\n\r\n")
            var head: [UInt8] = []
            while !String(decoding: head, as: UTF8.self).contains("\r\n\r\n") {
                let chunk = try socket.receive(timeout: Self.patience)
                if chunk.isEmpty { break }
                head += chunk
            }
            let start = ContinuousClock.now
            try socket.send("hello through the tunnel")
            let echoed = try socket.receive(exactly: 24, timeout: Self.patience)
            let elapsed = (ContinuousClock.now - start) / .seconds(1)
            socket.close()
            return (String(decoding: head, as: UTF8.self), echoed, (start - connected) / .seconds(1), elapsed)
        }
        await proxy.stop()
        echo.stop()
        // The proxy's relays adopt connections and listen on nothing: the one listener that
        // opens and closes in the log is the proxy's own, first and last (QA 66: neither was).
        let kinds = proxy.eventLog.events.map(\.kind)
        #expect(kinds.filter { if case .listenerClosed = $0 { true } else { false } } == [.listenerClosed(reason: "proxy stopped")], "\(kinds)")
        #expect(kinds.first == .listening(address: bound.description) && kinds.last == .listenerClosed(reason: "proxy stopped"), "\(kinds)")
        let (head, echoed, established, seconds) = try #require(result)
        #expect(head.hasPrefix("HTTP/1.1 200"))
        #expect(echoed == Array("hello through the tunnel".utf8))
        #expect(established >= 2 * rtt - 0.01 && established < Self.patience / .seconds(1), "the 200 came after \(established) s")
        // One round trip; the handshake charged again would make it two.
        #expect(seconds >= rtt - 0.01 && seconds < 1.9 * rtt, "round trip took \(seconds) s")
    }

    /// A tunnel's per-connection fault times count from when its client connected, not from when
    /// the proxy handed it to the relay after holding the CONNECT's answer (two round trips).
    @Test("a tunnel's fault-after counts from the client's connect")
    func tunnelFaultAfterCountsFromTheConnect() async throws {
        let echo = try LoopbackServer.echo()
        let proxy = ForwardProxy(configuration: .init(link: LinkConfiguration(both: DirectionLink(latency: .milliseconds(250))),
                                                      faults: [FaultRule(.rst, trigger: .after(.milliseconds(1500)))]), threads: 1)
        let bound = try await proxy.start()
        _ = try await proxy.relay(to: echo.endpoint, tunnel: true)
        let times = try? await offload { () -> (established: Double, reset: Double) in
            let connected = ContinuousClock.now
            let socket = try BlockingSocket.connect(to: bound)
            defer { socket.close() }
            try socket.send("CONNECT \(echo.endpoint) HTTP/1.1\r\nHost: \(echo.endpoint)\r\n\r\n")
            _ = try socket.receive(exactly: "HTTP/1.1 200 Connection Established\r\n\r\n".utf8.count, timeout: Self.patience)
            let established = (ContinuousClock.now - connected) / .seconds(1)
            _ = try? socket.receiveToEnd(timeout: Self.patience)  // the reset
            return (established, (ContinuousClock.now - connected) / .seconds(1))
        }
        await proxy.stop()
        echo.stop()
        let (established, elapsed) = try #require(times)
        // From the connect: 1.5 s, or at the hand-over (the 200) if a loaded machine made that
        // later (CI: the 200 late, the reset at 3.03 s). Counted from the hand-over it was the
        // 200 + 1.5 s: 2.5 s unloaded.
        #expect(elapsed >= 1.49 && elapsed < max(1.5, established) + 0.8, "the reset came \(elapsed) s after the connect, the 200 at \(established) s")
    }

    /// An answer the proxy writes itself crosses the link as any other would: a 502 for a
    /// destination that refuses comes two round trips after the request (handshake, request).
    @Test("the proxy's own error answers pay the link's round trips")
    func errorAnswersPayTheLink() async throws {
        let proxy = ForwardProxy(configuration: .init(link: Self.link), threads: 1)
        let bound = try await proxy.start()
        let result = try? await offload { () -> (String, Double) in
            let started = ContinuousClock.now
            let socket = try BlockingSocket.connect(to: bound)
            defer { socket.close() }
            try socket.send("CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n")
            let answer = try socket.receiveToEnd(timeout: Self.patience)
            return (String(decoding: answer, as: UTF8.self), (ContinuousClock.now - started) / .seconds(1))
        }
        await proxy.stop()
        let (answer, seconds) = try #require(result)
        #expect(answer.hasPrefix("HTTP/1.1 502"), "\(answer)")
        #expect(seconds >= 0.39 && seconds < Self.patience / .seconds(1), "the 502 came after \(seconds) s")
        // The answer and why are in the event log; nothing else of it was (no relay had it).
        // The answer is logged when it is written, two round trips after the failure.
        let events = proxy.eventLog.events
        let failedAt = events.first { if case .upstreamFailed = $0.kind { true } else { false } }?.time
        let answeredAt = events.first { if case .httpResponse = $0.kind { true } else { false } }?.time
        #expect(failedAt != nil && answeredAt != nil && answeredAt! - failedAt! >= 390_000_000, "\(events.map { ($0.time, $0.kind) })")
        let kinds = events.map(\.kind)
        #expect(kinds.contains { if case .upstreamFailed(.refused, "127.0.0.1:1: connection refused") = $0 { true } else { false } }, "\(kinds)")
        #expect(kinds.contains { if case .httpResponse(502, _, "proxy", nil) = $0 { true } else { false } }, "\(kinds)")
        // What was answered, just before its answer (QA 67: a 502 did not say for what).
        let answered = events.firstIndex { if case .httpResponse = $0.kind { true } else { false } }
        #expect(answered.map { events[$0 - 1].kind } == .httpRequest(method: "CONNECT", path: "127.0.0.1:1", reused: false, answeredBy: "proxy"), "\(kinds)")
    }

    /// A request's body is carried whole: bytes the client sent after its head, read in the
    /// head's own read cycle or while the proxy connected, were dropped (a 200,000-byte POST
    /// reached the server 28,672 bytes short).
    @Test("a POST's body reaches the server whole")
    func aBodyReachesTheServerWhole() async throws {
        let body = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
        let received = NIOLockedValueBox<[UInt8]>([])
        let server = try LoopbackServer { socket in
            var bytes: [UInt8] = []
            while bytes.count < 200_000 + 40, let chunk = try? socket.receive(timeout: Self.patience), !chunk.isEmpty { bytes += chunk }
            received.withLockedValue { $0 = bytes }
            try? socket.send("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        }
        defer { server.stop() }
        let proxy = ForwardProxy(configuration: .init(), threads: 1)
        let bound = try await proxy.start()
        let answer = try? await offload { () -> String in
            let socket = try BlockingSocket.connect(to: bound)
            defer { socket.close() }
            try socket.send("POST http://\(server.endpoint)/upload HTTP/1.1\r\nHost: \(server.endpoint)\r\nContent-Length: \(body.count)\r\n\r\n" )
            try socket.send(body)
            return String(decoding: try socket.receiveToEnd(timeout: Self.patience), as: UTF8.self)
        }
        await proxy.stop()
        #expect(answer?.hasPrefix("HTTP/1.1 200") == true, "\(answer ?? "no answer")")
        let bytes = received.withLockedValue { $0 }
        let headEnd = try #require(bytes.firstRange(of: Array("\r\n\r\n".utf8)))
        #expect(Array(bytes[headEnd.upperBound...]) == body, "the server got \(bytes.count - headEnd.upperBound) of \(body.count) body bytes")
    }

    @Test("bad requests get 400; CIDR ranges match")
    func badRequestsAndRanges() async throws {
        let proxy = ForwardProxy(configuration: .init(), threads: 1)
        let bound = try await proxy.start()
        let response = try? await offload { () -> String in
            let socket = try BlockingSocket.connect(to: bound)
            try socket.send("GET /relative HTTP/1.1\r\nHost: x\r\n\r\n")
            return String(decoding: try socket.receiveToEnd(timeout: .seconds(5)), as: UTF8.self)
        }
        await proxy.stop()
        #expect(response?.hasPrefix("HTTP/1.1 400") == true)
        let lan = try AddressRange(parsing: "192.168.1.0/24")
        #expect(lan.contains(try SocketAddress(ipAddress: "192.168.1.77", port: 1)))
        #expect(!lan.contains(try SocketAddress(ipAddress: "192.168.2.1", port: 1)))
        #expect(AddressRange.loopback.contains { $0.contains(try! SocketAddress(ipAddress: "::ffff:127.0.0.1", port: 1)) })
        #expect(throws: AddressRangeError.self) { try AddressRange(parsing: "10.0.0.0/40") }
    }
}
