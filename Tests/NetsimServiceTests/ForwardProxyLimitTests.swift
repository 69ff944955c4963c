import Foundation
import NetsimCore
import NetsimLoopback
import Testing
@testable import NetsimService

/// `netsim proxy --max-connections N`: at N open client connections the listener stops
/// accepting; a further client waits in the listen queue and is served when one ends.
@Suite("Forward proxy: connection limit")
struct ForwardProxyLimitTests {
    /// Opens a CONNECT tunnel to `target` through `proxy` and reads the proxy's answer head
    /// (nil when none came within `within`).
    static func tunnel(_ proxy: Endpoint, to target: Endpoint, within: Duration) throws -> (BlockingSocket, String?) {
        let socket = try BlockingSocket.connect(to: proxy)
        try socket.send("CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n\r\n")
        var head: [UInt8] = []
        while !String(decoding: head, as: UTF8.self).contains("\r\n\r\n") {
            guard let chunk = try? socket.receive(timeout: within), !chunk.isEmpty else { return (socket, nil) }
            head += chunk
        }
        return (socket, String(decoding: head, as: UTF8.self))
    }

    @Test func aClientOverTheLimitWaitsUntilAConnectionEnds() async throws {
        let echo = try LoopbackServer.echo()
        defer { echo.stop() }
        let proxy = ForwardProxy(configuration: .init(maximumConnections: 2), threads: 1)
        let bound = try await proxy.start()
        let outcome = try await offload { () -> (first: String?, waiting: String?, served: String?) in
            let (a, headA) = try Self.tunnel(bound, to: echo.endpoint, within: .seconds(30))
            let (b, _) = try Self.tunnel(bound, to: echo.endpoint, within: .seconds(30))
            defer { b.close() }
            // A deadline, not a sleep: the third must not be served while two are open.
            let (c, waiting) = try Self.tunnel(bound, to: echo.endpoint, within: .milliseconds(400))
            defer { c.close() }
            a.close()
            var head: [UInt8] = []
            while !String(decoding: head, as: UTF8.self).contains("\r\n\r\n") {
                guard let chunk = try? c.receive(timeout: .seconds(30)), !chunk.isEmpty else { break }
                head += chunk
            }
            return (headA, waiting, String(decoding: head, as: UTF8.self))
        }
        await proxy.stop()
        #expect(outcome.first?.hasPrefix("HTTP/1.1 200") == true, "\(String(describing: outcome.first))")
        #expect(outcome.waiting == nil, "served while two were open: \(String(describing: outcome.waiting))")
        #expect(outcome.served?.hasPrefix("HTTP/1.1 200") == true, "served once one ended: \(String(describing: outcome.served))")
        let changes = proxy.eventLog.events.compactMap { event -> String? in
            switch event.kind {
            case .listenerPaused: "paused"
            case .listenerResumed: "resumed"
            default: nil
            }
        }
        #expect(changes.prefix(2) == ["paused", "resumed"], "\(changes)")
    }

    /// Forty clients at once against a limit of three: three are answered, the rest wait unread.
    /// Before, the first read cycle accepted four (NIO accepts up to four per cycle, whatever
    /// `autoRead` becomes meanwhile).
    @Test func aBurstIsAcceptedNoFurtherThanTheLimit() async throws {
        let echo = try LoopbackServer.echo()
        defer { echo.stop() }
        let proxy = ForwardProxy(configuration: .init(maximumConnections: 3), threads: 1)
        let bound = try await proxy.start()
        let answered = try await offload { () -> Int in
            let clients = try (0..<40).map { _ in try BlockingSocket.connect(to: bound) }
            defer { for client in clients { client.close() } }
            for client in clients { try client.send("CONNECT \(echo.endpoint) HTTP/1.1\r\nHost: \(echo.endpoint)\r\n\r\n") }
            // Until three are answered (however loaded the machine), then 300 ms more for a fourth:
            // one accepted past the limit is answered within milliseconds of the others.
            var waiting = clients.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
            let giveUp = ContinuousClock.now + .seconds(30)
            var end = giveUp
            while ContinuousClock.now < end, !waiting.isEmpty {
                _ = poll(&waiting, nfds_t(waiting.count), 10)
                waiting = waiting.filter { $0.revents == 0 }
                if clients.count - waiting.count >= 3, end == giveUp { end = ContinuousClock.now + .milliseconds(300) }
            }
            return clients.count - waiting.count
        }
        await proxy.stop()
        #expect(answered == 3, "\(answered) of 40 clients answered under a limit of 3")
    }

    /// A client that ends its side before a whole head (a port probe, a cancelled request) is
    /// closed, so it does not hold a connection for good: with a limit of one, a half head
    /// ended by the client, then a real tunnel. Before, the first stayed in CLOSE-WAIT and the
    /// listener paused for ever.
    @Test func aClientThatLeavesBeforeItsHeadFreesItsPlace() async throws {
        let echo = try LoopbackServer.echo()
        defer { echo.stop() }
        let proxy = ForwardProxy(configuration: .init(maximumConnections: 1), threads: 1)
        let bound = try await proxy.start()
        let outcome = try await offload { () -> (closed: Bool, served: String?) in
            let probe = try BlockingSocket.connect(to: bound)
            defer { probe.close() }
            try probe.send("GET http://\(echo.endpoint)/ HTTP/1.1\r\n")
            probe.shutdownWrite()
            let closed = (try? probe.receiveToEnd(timeout: .seconds(30)))?.isEmpty == true
            let (next, head) = try Self.tunnel(bound, to: echo.endpoint, within: .seconds(30))
            next.close()
            return (closed, head)
        }
        await proxy.stop()
        #expect(outcome.closed, "the proxy kept the half-closed connection open")
        #expect(outcome.served?.hasPrefix("HTTP/1.1 200") == true, "the next client was not served: \(String(describing: outcome.served))")
    }

    /// A client that sends half a head and waits is answered 408 and closed after the head
    /// timeout, so such clients cannot hold every place (slowloris).
    @Test func aHeadThatNeverEndsGets408() async throws {
        let proxy = ForwardProxy(configuration: .init(maximumConnections: 1, headTimeout: .milliseconds(300)), threads: 1)
        let bound = try await proxy.start()
        let answer = try await offload { () -> String in
            let slow = try BlockingSocket.connect(to: bound)
            defer { slow.close() }
            try slow.send("GET http://127.0.0.1:9/ HTTP/1.1\r\n")
            return String(decoding: try slow.receiveToEnd(timeout: .seconds(30)), as: UTF8.self)
        }
        await proxy.stop()
        #expect(answer.hasPrefix("HTTP/1.1 408 Request Timeout"), "\(answer)")
    }
}
