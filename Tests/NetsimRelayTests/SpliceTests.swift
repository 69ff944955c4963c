import Crypto
import Foundation
import NetsimCore
import NetsimLink
import NetsimLoopback
@testable import NetsimRelay
import Testing

/// The zero-copy path (`RelayConfiguration.splice`): bytes intact across switches between the
/// splice and copy paths, FIN and RST passed on, nothing leaked.
@Suite("Splice path", .serialized)
struct SpliceTests {
    /// The `path` events of the log, in order.
    static func paths(_ relay: Relay) -> [String] {
        relay.eventLog.events.compactMap { if case .path(let path) = $0.kind { path } else { nil } }
    }

    /// A link that shapes (so the connection must leave the splice path) without slowing much.
    static let shaped: LinkConfiguration = {
        var link = LinkConfiguration.unimpaired
        link.up.latency = .milliseconds(1)
        link.down.latency = .milliseconds(1)
        return link
    }()

    /// Switches (a model or a fault applied, then lifted) from seeded offsets of a two-way
    /// transfer on, each once the one before has taken effect (its `path` event), so every run
    /// makes all of them however loaded the machine. The server runs up to 12 MiB ahead of the
    /// reader, so at each switch bytes are in flight everywhere: in the pipes, in NIO's writes,
    /// in the sockets; and both directions stay open until the last switch (a connection that
    /// has half-closed stays on the copying path), the client's paced to what it has read.
    @Test(arguments: [UInt64(21), 22])
    func switchesAtSeededOffsetsLoseDuplicateAndReorderNothing(seed: UInt64) async throws {
        let switches = 8, spacing = 2 << 20, lead = 12
        let blocks = switches * spacing / PatternStream.blockSize + 2 * lead, total = blocks * PatternStream.blockSize
        let progress = ByteProgress()
        let upstream = try PatternServer(blocks: blocks, down: PatternStream(seed: seed + 100), pacedBy: progress, lead: lead)
        defer { upstream.stop() }
        var random = SeededRandom(seed: seed)
        let offsets = (0..<switches).map { $0 * spacing + Int(random.next() % UInt64(spacing)) }
        try await withRelay(upstream: upstream.endpoint, splice: true) { relay, endpoint in
            let fault = ResultBox<FaultID>()
            let made = ResultBox<Int>()
            made.value = 0
            let client = try await PatternServer.exchange(blocks, of: PatternStream(seed: seed + 200), through: endpoint, progress: progress) { total in
                // The reader waits while a switch is asked for, never for one to take effect.
                let index = made.value ?? 0
                guard index < switches, total >= offsets[index], Self.paths(relay).count > index else { return }
                made.value = index + 1
                Self.waitFor {
                    switch index % 4 {
                    case 0: await relay.setLink(Self.shaped)
                    case 1: await relay.setLink(.unimpaired)
                    case 2: fault.value = try? await relay.addFault(FaultRule(.slowClose(.milliseconds(1))))
                    default: if let id = fault.value { await relay.removeFault(id) }
                    }
                }
            }
            let received = try upstream.received.wait()
            #expect(made.value == switches, "every switch was asked for before the transfer ended")
            #expect(client.count == total)
            #expect(received.count == total)
            #expect(client.received == (try upstream.sent.wait()), "server → client bytes intact and in order")
            #expect(received.digest == client.sent, "client → server bytes intact and in order")
            // The last switch (back to splicing) may still be under way when the stream ends.
            let paths = Self.paths(relay)
            let alternating = (0...switches).map { $0 % 2 == 0 ? "splice" : "copy" }
            #expect(Array(alternating.prefix(paths.count)) == paths && paths.count >= switches, "\(paths)")
        }
    }

    /// Called on a thread outside the concurrency pool (the reader's): runs `body` as a task and
    /// blocks until it is done.
    static func waitFor(_ body: @escaping @Sendable () async -> Void) {
        let done = DispatchSemaphore(value: 0)
        Task {
            await body()
            done.signal()
        }
        done.wait()
    }

    @Test(arguments: [Side.client, Side.upstream])
    func finIsPassedOnAfterTheBytesAheadOfIt(first: Side) async throws {
        let payload = Array(PatternStream(seed: 5).block(1)[0..<(768 << 10)])
        let server = try LoopbackServer { socket in
            if first == .upstream {
                try? socket.send(payload)
                socket.shutdownWrite()
                _ = try? socket.receiveToEnd()
            } else {
                let request = (try? socket.receiveToEnd()) ?? []
                try? socket.send(Array("got \(request.count)".utf8))
                socket.shutdownWrite()
            }
        }
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint, splice: true) { relay, endpoint in
            let reply = try await offload { () -> [UInt8] in
                let socket = try BlockingSocket.connect(to: endpoint)
                if first == .client {
                    try socket.send(payload)
                    socket.shutdownWrite()
                    return try socket.receiveToEnd(timeout: .seconds(10))
                }
                let got = try socket.receiveToEnd(timeout: .seconds(10))
                socket.shutdownWrite()
                return got
            }
            #expect(reply == (first == .client ? Array("got \(payload.count)".utf8) : payload))
            let closed = await relay.eventLog.waitFor(timeout: .seconds(5)) { $0.isClosed }
            if case .closed(_, let how, _, _)? = closed?.kind { #expect(how == .fin) } else { Issue.record("no closed event") }
            #expect(Self.paths(relay).first == "splice")
        }
    }

    @Test func resetIsPassedOn() async throws {
        let server = try RecordingServer()
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint, splice: true) { relay, endpoint in
            let socket = try await offload { () -> BlockingSocket in
                let socket = try BlockingSocket.connect(to: endpoint)
                try socket.send(Array(repeating: 7, count: 64 << 10))
                _ = try socket.receive(timeout: .seconds(5))  // echoed: the connection is through
                return socket
            }
            #expect(await relay.eventLog.waitFor(timeout: .seconds(5)) { if case .path("splice") = $0.kind { true } else { false } } != nil)
            socket.reset()
            #expect(await server.wait { $0.first?.ending == .reset }, "the RST reached upstream")
        }
    }

    @Test func thousandsOfConnectionsLeakNoDescriptors() async throws {
        let server = try LoopbackServer.echo()
        defer { server.stop() }
        func openDescriptors() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0 }
        try await withRelay(upstream: server.endpoint, splice: true) { relay, endpoint in
            let count = 1000
            let before = openDescriptors(), pipesBefore = SplicePipePool.shared.outstanding
            let deadline = ContinuousClock.now + .seconds(60)
            let done = try await offload { () -> Int in
                var done = 0
                for _ in 0..<count where ContinuousClock.now < deadline {
                    let socket = try BlockingSocket.connect(to: endpoint)
                    try socket.send(Array("ping".utf8))
                    _ = try socket.receive(timeout: .seconds(5))
                    socket.shutdownWrite()
                    _ = try socket.receiveToEnd(timeout: .seconds(5))
                    socket.close()
                    done += 1
                }
                return done
            }
            #expect(done >= 500, "only \(done) connections in 60 s")
            // The last connections finish on the relay's loops just after the client saw EOF.
            #expect(await relay.connectionsClosed(within: .seconds(5)), "\(relay.openConnectionCount) still open")
            let spliced = Self.paths(relay).filter { $0 == "splice" }.count
            #expect(spliced > done / 2, "most connections took the splice path (\(spliced) of \(done))")
            #expect(SpliceForwarder.openCount == 0, "every forwarder closed its duplicates")
            #expect(SplicePipePool.shared.outstanding == pipesBefore, "every pipe came back to the pool")
            #expect(SplicePipePool.shared.idleCount <= SplicePipePool.shared.maximumIdle)
            // The pool keeps at most 16 idle pipes (32 descriptors); other suites running in
            // parallel open descriptors too, hence the margin.
            #expect(openDescriptors() - before <= 32 + 64, "descriptors before \(before), after \(openDescriptors())")
        }
    }
}
