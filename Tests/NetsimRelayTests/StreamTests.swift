import Crypto
import Foundation
import NetsimCore
import NetsimLink
import NetsimLoopback
import NetsimRelay
import Testing

@Suite("Byte stream through the relay")
struct StreamTests {
    @Test func twoHundredFiftySixMebibytesEachWayArriveIntactAndInOrder() async throws {
        let blocks = 256
        let upPattern = PatternStream(seed: 1)
        let downPattern = PatternStream(seed: 2)
        // Upstream: send 256 MiB down while hashing what comes up.
        let upstream = try PatternServer(blocks: blocks, down: downPattern)
        defer { upstream.stop() }
        var link = LinkConfiguration.unimpaired
        for direction in Direction.allCases {
            link[direction] = DirectionLink(
                latency: .milliseconds(2), jitter: .milliseconds(1), distribution: .normal,
                bandwidth: .gbit(8), sliceSize: 64 * 1024)
        }
        try await withRelay(upstream: upstream.endpoint, link: link) { relay, endpoint in
            let client = try await PatternServer.exchange(blocks, of: upPattern, through: endpoint)
            let received = try upstream.received.wait()
            #expect(client.count == blocks * PatternStream.blockSize)
            #expect(received.count == blocks * PatternStream.blockSize)
            #expect(client.received == (try upstream.sent.wait()), "server → client bytes intact and in order")
            #expect(received.digest == client.sent, "client → server bytes intact and in order")
            let closed = await relay.eventLog.waitFor(timeout: .seconds(5)) { $0.isClosed }
            // Both sides half-close at about the same time: either FIN may be first.
            if case .closed(_, let how, let up, let down)? = closed?.kind {
                #expect(how == .fin && up == blocks << 20 && down == blocks << 20)
            } else {
                Issue.record("no closed event")
            }
        }
    }

    /// Sends `payload` to an echo server through the relay at `endpoint`, half-closes, and reads
    /// the echo to its end: what came back and how long the round took, in seconds.
    static func echo(_ payload: [UInt8], through endpoint: Endpoint) async throws -> ([UInt8], Double) {
        try await offload {
            let socket = try BlockingSocket.connect(to: endpoint)
            let start = ContinuousClock.now
            Thread { try? socket.send(payload); socket.shutdownWrite() }.start()
            let echoed = try socket.receiveToEnd(timeout: .seconds(30))
            return (echoed, elapsed(since: start))
        }
    }

    @Test func lossStallsTheStreamButNeverCorruptsIt() async throws {
        // 3% segment loss on 512 KiB (≥ 362 segments): at least one loss is all but certain
        // (0.97^362 ≈ 2e-5), and each costs a retransmission timeout of at least 200 ms.
        let server = try LoopbackServer.echo()
        defer { server.stop() }
        var link = LinkConfiguration.unimpaired
        link.up.loss = .bernoulli(.percent(3))
        link.up.latency = .milliseconds(1)
        link.down.latency = .milliseconds(1)
        let pattern = PatternStream(seed: 3)
        try await withRelay(upstream: server.endpoint, link: link) { _, endpoint in
            let sent = Array(pattern.block(0)[0..<(512 << 10)])
            let (received, seconds) = try await Self.echo(sent, through: endpoint)
            #expect(received == sent, "every byte arrives, in order")
            #expect(seconds >= 0.2, "a lost segment stalls the stream for an RTO; took \(seconds) s")
        }
    }

    @Test func aTracedLinkPacesTheStreamAtItsOpportunitiesAndKeepsEveryByte() async throws {
        // Down follows a trace of one 1500-byte opportunity a millisecond (12 Mbit/s, Mahimahi's
        // own example): 300 KB need 205 opportunities, so the echo cannot be back in < ~200 ms.
        let server = try LoopbackServer.echo()
        defer { server.stop() }
        var link = LinkConfiguration.unimpaired
        link.down.trace = try DeliveryTrace(parsing: "1\n", name: "one-per-ms")
        let pattern = PatternStream(seed: 5)
        try await withRelay(upstream: server.endpoint, link: link) { _, endpoint in
            let sent = Array(pattern.block(0)[0..<300_000])
            let (received, seconds) = try await Self.echo(sent, through: endpoint)
            #expect(received == sent, "every byte arrives, in order")
            #expect(seconds >= 0.19, "205 opportunities, one a millisecond; took \(seconds) s")
        }
    }

    @Test(arguments: [Side.client, Side.upstream])
    func halfCloseIsForwardedAfterTheBytesAheadOfIt(first: Side) async throws {
        // Whoever half-closes first keeps reading: the other side sends a reply after the FIN.
        let server = try LoopbackServer { socket in
            if first == .upstream {
                try? socket.send("server done")
                socket.shutdownWrite()
                let rest = (try? socket.receiveToEnd()) ?? []
                try? socket.send(rest)  // fails: our side is shut; nothing to assert here
            } else {
                let request = (try? socket.receiveToEnd()) ?? []
                try? socket.send("got \(request.count) bytes after your FIN")
                socket.shutdownWrite()
            }
        }
        defer { server.stop() }
        var link = LinkConfiguration.unimpaired
        link.up.latency = .milliseconds(30)
        link.down.latency = .milliseconds(30)
        try await withRelay(upstream: server.endpoint, link: link) { relay, endpoint in
            let reply = try await offload { () -> String in
                let socket = try BlockingSocket.connect(to: endpoint)
                if first == .client {
                    try socket.send([UInt8](repeating: 1, count: 10_000))
                    socket.shutdownWrite()
                    return String(decoding: try socket.receiveToEnd(timeout: .seconds(5)), as: UTF8.self)
                } else {
                    let got = try socket.receiveToEnd(timeout: .seconds(5))
                    try socket.send("still talking")
                    socket.shutdownWrite()
                    return String(decoding: got, as: UTF8.self)
                }
            }
            #expect(reply == (first == .client ? "got 10000 bytes after your FIN" : "server done"))
            _ = await relay.eventLog.waitFor(timeout: .seconds(5)) { $0.isClosed }
            let halfClosed = relay.eventLog.events.filter { if case .halfClosed = $0.kind { true } else { false } }
            #expect(halfClosed.first?.kind == .halfClosed(by: first))
            #expect(halfClosed.count == 2)
        }
    }

    /// Delayed: both legs read with the kernel's receive times (``TimedReads``), and a reset
    /// reaches the relay there.
    @Test(arguments: [Side.client, Side.upstream], [false, true])
    func resetIsForwardedAsReset(by resetter: Side, delayed: Bool) async throws {
        let serverSaw = ResultBox<String>()
        let server = try LoopbackServer { socket in
            _ = try? socket.receive(exactly: 5)
            try? socket.send("hello")
            if resetter == .upstream {
                socket.reset()
                return
            }
            do {
                // A bound against hanging only: the reset ends the wait (a CI run under load
                // waited out an earlier 5 s bound here).
                let more = try socket.receive(timeout: .seconds(30))
                serverSaw.value = more.isEmpty ? "eof" : "data"
            } catch let failure as SocketFailure {
                serverSaw.value = "\(failure)"
            } catch {
                serverSaw.value = "\(error)"
            }
        }
        defer { server.stop() }
        let latency = DirectionLink(latency: delayed ? .milliseconds(20) : .zero)
        try await withRelay(upstream: server.endpoint, link: LinkConfiguration(up: latency, down: latency)) { relay, endpoint in
            let clientSaw = try await offload { () -> String in
                let socket = try BlockingSocket.connect(to: endpoint)
                try socket.send("hello")
                _ = try socket.receive(exactly: 5)
                if resetter == .client {
                    socket.reset()
                    return "reset sent"
                }
                do { return try socket.receive(timeout: .seconds(30)).isEmpty ? "eof" : "data" } catch let f as SocketFailure { return "\(f)" }
            }
            if resetter == .upstream {
                #expect(clientSaw == "connection reset by peer")
            } else {
                let saw = try serverSaw.wait()
                #expect(saw == "connection reset by peer")
            }
            let closed = await relay.eventLog.waitFor(timeout: .seconds(5)) { $0.isClosed }
            if case .closed(let by, let how, _, _)? = closed?.kind {
                #expect(by == resetter && how == .rst)
            } else {
                Issue.record("no closed event")
            }
        }
    }

    /// A slow reader for 3 s while the server tries to push 128 MiB.
    @Test(arguments: [true, false])
    func aSlowReaderMakesTheRelayStopReadingAndMemoryStaysBounded(shaped: Bool) async throws {
        let limit = 1 << 20
        let attempt = 128 << 20
        let sent = ResultBox<Int>()
        let server = try LoopbackServer { socket in
            let chunk = [UInt8](repeating: 0x5A, count: 64 * 1024)
            var total = 0
            while total < attempt, (try? socket.send(chunk)) != nil { total += chunk.count; sent.value = total }
        }
        defer { server.stop() }
        var link = LinkConfiguration.unimpaired
        if shaped { link.down.latency = .milliseconds(5) }  // the relay itself holds bytes
        try await withRelay(upstream: server.endpoint, link: link, bufferLimit: limit) { relay, endpoint in
            let socket = try await offload { () -> BlockingSocket in
                let socket = try BlockingSocket.connect(to: endpoint)
                socket.setBuffer(receive: 64 * 1024)
                try socket.send("go")
                return socket
            }
            // Read 16 KiB every 20 ms for 3 s: about 2.4 MiB.
            let read = try await offload { () -> Int in
                var total = 0
                let deadline = ContinuousClock.now + .seconds(3)
                while ContinuousClock.now < deadline {
                    total += try socket.receive(maximum: 16 * 1024).count
                    usleep(20_000)
                }
                return total
            }
            let peak = await relay.connectionStats().first?.peakQueued ?? -1
            if shaped {
                // The queue may overshoot the limit by one read cycle, never more.
                #expect(peak > limit / 2 && peak <= limit + Relay.readOvershoot, "peak queued \(peak)")
            } else {
                #expect(peak == 0, "the fast path queues nothing")
            }
            // What the server got rid of but the client has not read sits in kernel buffers
            // (autotuned up to 32 MiB here) and the relay's bounded queue. Without backpressure the
            // relay would have taken all 128 MiB.
            let inFlight = (sent.value ?? 0) - read
            #expect(inFlight < 64 << 20, "\(inFlight) bytes in flight")
            socket.close()
        }
    }

    /// ``Relay/connectionsClosed(within:)`` answers at once with no connection open, runs out
    /// while one stays open, and resumes a waiter when the last one finishes.
    @Test func connectionsClosedResumesWhenTheLastConnectionFinishes() async throws {
        let server = try LoopbackServer.echo()
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint) { relay, endpoint in
            #expect(await relay.connectionsClosed(within: .zero))
            let socket = try await offload { () -> BlockingSocket in
                let socket = try BlockingSocket.connect(to: endpoint)
                try socket.send([7])
                _ = try socket.receive(exactly: 1)
                return socket
            }
            #expect(await relay.connectionsClosed(within: .milliseconds(100)) == false)
            async let closed = relay.connectionsClosed(within: .seconds(30))
            socket.shutdownWrite()
            _ = try await offload { try socket.receiveToEnd() }
            socket.close()
            #expect(await closed)
            #expect(relay.openConnectionCount == 0)
        }
    }

    @Test func everyConnectionGetsAnIDAndACompleteEventHistory() async throws {
        let server = try LoopbackServer.echo()
        defer { server.stop() }
        let log = EventLog()
        let sink = CollectingSink()
        log.addSink(sink)
        let relay = Relay(configuration: RelayConfiguration(upstream: server.endpoint), eventLog: log)
        let endpoint = try await relay.start()
        for size in [10, 20_000] {
            try await offload {
                let socket = try BlockingSocket.connect(to: endpoint)
                try socket.send([UInt8](repeating: 1, count: size))
                _ = try socket.receive(exactly: size)
                socket.shutdownWrite()
                _ = try socket.receiveToEnd()
            }
        }
        _ = await log.waitFor(timeout: .seconds(5)) { $0.connection == ConnectionID(2) && $0.isClosed }
        await relay.stop()
        for (id, size) in [(ConnectionID(1), 10), (ConnectionID(2), 20_000)] {
            let events = log.events(for: id)
            #expect(events.first.map { if case .opened = $0.kind { true } else { false } } == true)
            #expect(events.contains { if case .upstreamConnected = $0.kind { true } else { false } })
            let up = events.reduce(0) { if case .bytes(.up, let n) = $1.kind { $0 + n } else { $0 } }
            let down = events.reduce(0) { if case .bytes(.down, let n) = $1.kind { $0 + n } else { $0 } }
            #expect(up == size && down == size)
            #expect(events.last?.kind == .closed(by: .client, how: .fin, upBytes: size, downBytes: size))
            #expect(zip(events, events.dropFirst()).allSatisfy { $0.time <= $1.time }, "timestamps in order")
        }
        // The sink saw the same events, and each renders as one JSON object.
        #expect(sink.lines.count == log.events.count)
        for line in sink.lines {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object?["event"] is String && object?["t"] is Double)
        }
    }

    @Test func aLinkChangeAppliesToOpenConnections() async throws {
        let server = try LoopbackServer.echo()
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint) { relay, endpoint in
            let socket = try await offload { try BlockingSocket.connect(to: endpoint) }
            func rtt() async throws -> Double {
                try await offload {
                    let start = ContinuousClock.now
                    try socket.send("x")
                    _ = try socket.receive(exactly: 1)
                    return elapsed(since: start)
                }
            }
            #expect(try await rtt() < 0.15)
            var link = LinkConfiguration.unimpaired
            link.up.latency = .milliseconds(100)
            link.down.latency = .milliseconds(100)
            await relay.setLink(link)
            let slowed = try await rtt()
            #expect(slowed >= 0.199 && slowed < 1.5, "round trip grows by 2 × 100 ms, was \(slowed)")
        }
    }
}

/// A value set on one thread and awaited on another.
final class ResultBox<T: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var stored: T?

    var value: T? {
        get { condition.withLock { stored } }
        set { condition.withLock { stored = newValue; condition.broadcast() } }
    }

    func wait(timeout: TimeInterval = 120) throws -> T {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date(timeIntervalSinceNow: timeout)
        while stored == nil {
            if !condition.wait(until: deadline) { throw SocketFailure.timedOut }
        }
        return stored!
    }
}

/// An event sink that keeps the JSON lines it was given.
final class CollectingSink: EventSink, @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String] = []
    var lines: [String] { lock.withLock { stored } }
    func receive(_ event: Event) { lock.withLock { stored.append(event.jsonLine) } }
    func flush() {}
}

@Suite("Per-connection links")
struct LinkChooserTests {
    @Test func aChooserGivesEachConnectionItsOwnLinkAndAppliesToOpenOnes() async throws {
        let server = try LoopbackServer.echo()
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint) { relay, endpoint in
            // Connection ids follow the relay's accepts, which run on several event loops: connect
            // the next socket only once the relay has taken the previous one.
            func connect(_ number: Int) async throws -> BlockingSocket {
                let socket = try await offload { try BlockingSocket.connect(to: endpoint) }
                _ = await relay.eventLog.waitFor(timeout: .seconds(5)) { $0.connection == ConnectionID(UInt64(number)) }
                return socket
            }
            let open = try await connect(1)
            // Odd connections get 150 ms each way; even ones none.
            await relay.setLinkChooser { id in
                var link = LinkConfiguration.unimpaired
                if id.raw % 2 == 1 {
                    link.up.latency = .milliseconds(150)
                    link.down.latency = .milliseconds(150)
                }
                return link
            }
            func rtt(_ socket: BlockingSocket) async throws -> Double {
                try await offload {
                    let start = ContinuousClock.now
                    try socket.send("x")
                    _ = try socket.receive(exactly: 1)
                    return elapsed(since: start)
                }
            }
            let second = try await connect(2)
            let third = try await connect(3)
            #expect(try await rtt(open) >= 0.299, "an open connection gets its chosen link")
            #expect(try await rtt(second) < 0.15)
            #expect(try await rtt(third) >= 0.299)
            await relay.setLinkChooser(nil)
            #expect(try await rtt(third) < 0.15, "without a chooser, the one link (unimpaired) again")
        }
    }
}
