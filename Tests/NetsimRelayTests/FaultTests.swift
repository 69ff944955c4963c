import Foundation
import NetsimCore
import NetsimLink
import NetsimLoopback
import NetsimRelay
import Testing

/// For each fault, what a plain client socket sees through the relay: EOF, ECONNRESET,
/// ECONNREFUSED or silence — and what the upstream saw.
@Suite("Connection faults, seen from a plain socket", .serialized)
struct FaultTests {
    /// One request/response through `endpoint`, to prove a connection works.
    static func roundTrip(_ socket: BlockingSocket, _ text: String = "ping") throws -> String {
        try socket.send(text)
        return String(decoding: try socket.receive(exactly: text.utf8.count), as: UTF8.self)
    }

    /// How a fresh connection to `endpoint` ends: nil when a round trip works.
    static func connectFailure(_ endpoint: Endpoint) async throws -> SocketFailure? {
        try await offload { () -> SocketFailure? in
            do {
                let socket = try BlockingSocket.connect(to: endpoint)
                defer { socket.close() }
                _ = try FaultTests.roundTrip(socket)
                return nil
            } catch let failure as SocketFailure { return failure }
        }
    }

    @Test func rejectResetsEveryAttemptAndLogsItThenAcceptsWhenLifted() async throws {
        let server = try RecordingServer()
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint) { relay, endpoint in
            let id = try await relay.addFault(FaultRule(.reject))
            for _ in 0..<3 {
                let failure = try await Self.connectFailure(endpoint)
                #expect(failure == .reset || failure == .brokenPipe, "\(String(describing: failure))")
            }
            let opened = relay.eventLog.events.filter { if case .opened = $0.kind { true } else { false } }
            #expect(opened.count == 3, "every attempt reached the relay and is in the log")
            #expect(server.snapshot.isEmpty, "nothing went upstream")
            await relay.removeFault(id)
            let reply = try await offload { try Self.roundTrip(BlockingSocket.connect(to: endpoint)) }
            #expect(reply == "ping")
        }
    }

    @Test func blackholeAcceptsButNeverAnswersThenDeliversWhenLifted() async throws {
        let server = try RecordingServer()
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint) { relay, endpoint in
            let socket = try await offload { try BlockingSocket.connect(to: endpoint) }
            #expect(try await offload { try Self.roundTrip(socket, "before") } == "before")
            // In force on every open connection when addFault returns.
            let id = try await relay.addFault(FaultRule(.blackhole))
            let silence = try await offload { () -> SocketFailure? in
                try socket.send("during")
                do { _ = try socket.receive(timeout: .milliseconds(400)); return nil } catch let f as SocketFailure { return f }
            }
            #expect(silence == .timedOut, "a blackholed connection neither answers nor closes")
            #expect(server.snapshot.first?.received.count == "before".count, "nothing reached upstream")
            await relay.removeFault(id)
            // TCP would retransmit: the held bytes arrive once the path is back.
            let reply = try await offload { String(decoding: try socket.receive(exactly: 6), as: UTF8.self) }
            #expect(reply == "during")
        }
    }

    /// A rule for open connections that finds none acts on nothing, and the log says so (QA 64:
    /// a check that expected its effect failed with no trace of why); one that does act does not.
    @Test func aRuleForOpenConnectionsThatFindsNoneSaysSo() async throws {
        let server = try RecordingServer()
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint) { relay, endpoint in
            try await relay.addFault(FaultRule(.stale(.rst), target: .existing))
            func noted() -> [String] {
                relay.eventLog.events.compactMap { if case .faultFired(_, let detail) = $0.kind, $0.connection == nil { detail } else { nil } }
            }
            #expect(noted() == ["nothing done: it targets existing connections, and no connection was open"])
            let socket = try await offload { try BlockingSocket.connect(to: endpoint) }
            _ = try await offload { try Self.roundTrip(socket) }
            try await relay.addFault(FaultRule(.fin, target: .existing))
            #expect(noted().count == 1, "\(noted())")
        }
    }

    @Test func finClosesBothLegsGracefully() async throws {
        let server = try RecordingServer()
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint) { relay, endpoint in
            let socket = try await offload { try BlockingSocket.connect(to: endpoint) }
            _ = try await offload { try Self.roundTrip(socket) }
            try await relay.addFault(FaultRule(.fin, target: .existing))
            let seen = try await offload { try socket.receive(timeout: .seconds(2)) }
            #expect(seen.isEmpty, "the client reads EOF")
            #expect(await server.wait { $0.first?.ending == .eof }, "the upstream reads EOF too")
            // A write after it: the closed leg answers with RST, as a server's closed socket
            // does, so the client's next call fails (faults.md: EPIPE/ECONNRESET). Before, the
            // relay read and dropped such bytes for its 10 s grace; 8 s tells the two apart, with room for a loaded machine.
            let failure = try await offload { () -> SocketFailure? in
                let deadline = ContinuousClock.now + .seconds(8)
                while ContinuousClock.now < deadline {
                    do {
                        try socket.send("late")
                        _ = try socket.receive(timeout: .milliseconds(100))
                    } catch let failure as SocketFailure where failure != .timedOut {
                        return failure
                    } catch {}
                }
                return nil
            }
            #expect(failure == .reset || failure == .brokenPipe, "\(String(describing: failure))")
        }
    }

    @Test func rstResetsBothLegs() async throws {
        let server = try RecordingServer()
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint) { relay, endpoint in
            let socket = try await offload { try BlockingSocket.connect(to: endpoint) }
            _ = try await offload { try Self.roundTrip(socket) }
            try await relay.addFault(FaultRule(.rst, target: .existing))
            let failure = try await offload { () -> SocketFailure? in
                do { _ = try socket.receive(timeout: .seconds(2)); return nil } catch let f as SocketFailure { return f }
            }
            #expect(failure == .reset)
            #expect(await server.wait { $0.first?.ending == .reset })
        }
    }

    @Test(arguments: [CloseKind.rst, CloseKind.fin])
    func staleLooksAliveUntilTheClientWritesThenSwallowsAndCloses(mode: CloseKind) async throws {
        let server = try RecordingServer()
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint) { relay, endpoint in
            let socket = try await offload { try BlockingSocket.connect(to: endpoint) }
            _ = try await offload { try Self.roundTrip(socket, "warm") }
            try await relay.addFault(FaultRule(.stale(mode)))
            let quiet = try await offload { () -> SocketFailure? in
                do { _ = try socket.receive(timeout: .milliseconds(300)); return nil } catch let f as SocketFailure { return f }
            }
            #expect(quiet == .timedOut, "a stale connection looks alive: no EOF, no reset")
            let outcome = try await offload { () -> String in
                try socket.send("GET / after unlock")
                do { return try socket.receive(timeout: .seconds(2)).isEmpty ? "eof" : "data" } catch let f as SocketFailure { return "\(f)" }
            }
            #expect(outcome == (mode == .rst ? "connection reset by peer" : "eof"))
            // The upstream leg gets a FIN after the swallowed bytes would have gone ahead of it.
            #expect(await server.wait { $0.first?.ending == .eof })
            #expect(server.totalReceived == "warm".count, "the swallowed bytes never reach upstream")
            let fired = relay.eventLog.events.contains {
                if case .faultFired("stale", let detail) = $0.kind { detail.contains("swallowed 18 bytes") } else { false }
            }
            #expect(fired)
        }
    }

    @Test func idleCloseClosesSilentConnectionsOnly() async throws {
        let server = try RecordingServer()
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint, faults: [FaultRule(.idleClose(.milliseconds(500)))]) { _, endpoint in
            // The busy connection talks every 100 ms for 1.2 s and must survive. Its thread
            // connects and talks by itself from the start: a task between its connect and its
            // first ping can resume half a second late on a busy machine, and CI's idled it out.
            let busyTalked = Waitable<Bool?>(nil)
            Thread {
                let talked = (try? BlockingSocket.connect(to: endpoint)).map { busy in
                    defer { busy.close() }
                    return (0..<12).allSatisfy { _ in
                        defer { usleep(100_000) }
                        return (try? Self.roundTrip(busy)) == "ping"
                    }
                }
                busyTalked.update { $0 = talked ?? false }
            }.start()
            // Timed on its thread too, from before its connect (the relay's idle clock starts later).
            let (idleEnd, idleAfter) = try await offload { () -> ([UInt8], Double) in
                let start = ContinuousClock.now
                let idle = try BlockingSocket.connect(to: endpoint)
                defer { idle.close() }
                return (try idle.receive(timeout: .seconds(5)), elapsed(since: start))
            }
            #expect(idleEnd.isEmpty, "the idle connection is closed with FIN")
            #expect(idleAfter >= 0.5 && idleAfter < 3.0, "closed after about 500 ms, was \(idleAfter)")
            #expect(await busyTalked.wait(within: .seconds(30)) { $0 } == true, "the busy connection was closed")
        }
    }

    @Test func limitDeliversExactlyTheAllowedBytesThenCloses() async throws {
        let payload = [UInt8](repeating: 7, count: 5000)
        let server = try RecordingServer { _ in payload }
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint, faults: [FaultRule(.limit(bytes: 1000))]) { _, endpoint in
            let received = try await offload { () -> [UInt8] in
                let socket = try BlockingSocket.connect(to: endpoint)
                try socket.send("x")
                return try socket.receiveToEnd(timeout: .seconds(3))
            }
            #expect(received.count == 1000)
        }
    }

    @Test func slowCloseHoldsTheFinBackButNotTheBytes() async throws {
        let server = try LoopbackServer { socket in
            _ = try? socket.receive(exactly: 4)
            try? socket.send("bye")
            socket.shutdownWrite()
            _ = try? socket.receiveToEnd(timeout: .seconds(5))
        }
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint, faults: [FaultRule(.slowClose(.milliseconds(400)))]) { _, endpoint in
            let (dataAfter, eofAfter) = try await offload { () -> (Double, Double) in
                let socket = try BlockingSocket.connect(to: endpoint)
                let start = ContinuousClock.now
                try socket.send("ping")
                _ = try socket.receive(exactly: 3)
                let data = elapsed(since: start)
                let end = try socket.receive(timeout: .seconds(3))
                return (data, end.isEmpty ? elapsed(since: start) : -1)
            }
            #expect(dataAfter < 0.3, "the bytes are not held, took \(dataAfter)")
            #expect(eofAfter >= 0.4 && eofAfter < 2.5, "the FIN comes 400 ms late, at \(eofAfter)")
        }
    }

    @Test func anAfterRuleAddedAtRunTimeNeverActsRetroactively() async throws {
        let server = try RecordingServer()
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint) { relay, endpoint in
            let socket = try await offload { try BlockingSocket.connect(to: endpoint) }
            _ = try await offload { try Self.roundTrip(socket) }
            try await Task.sleep(for: .milliseconds(400))
            // The connection is 400 ms old; the rule says 300 ms: it acts 300 ms from now.
            let added = ContinuousClock.now
            try await relay.addFault(FaultRule(.fin, trigger: .after(.milliseconds(300))))
            let seconds = try await offload { () -> Double in
                _ = try socket.receive(timeout: .seconds(3))
                return elapsed(since: added)
            }
            #expect(seconds >= 0.29 && seconds < 2, "EOF 300 ms after the rule arrived, was \(seconds)")
            let fired = relay.eventLog.events.filter { if case .faultFired("fin", _) = $0.kind { true } else { false } }
            #expect(fired.count == 1)
        }
    }

    @Test func slowConnectDelaysTheUpstreamConnect() async throws {
        let server = try RecordingServer()
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint, faults: [FaultRule(.slowConnect(.milliseconds(400)))]) { relay, endpoint in
            let seconds = try await offload { () -> Double in
                let start = ContinuousClock.now
                let socket = try BlockingSocket.connect(to: endpoint)
                _ = try Self.roundTrip(socket)
                return elapsed(since: start)
            }
            #expect(seconds >= 0.39 && seconds < 3, "first answer after ~400 ms, was \(seconds)")
            let connected = relay.eventLog.events.compactMap { event -> Int64? in
                if case .upstreamConnected(_, let after) = event.kind { after } else { nil }
            }
            #expect(connected.count == 1)
        }
    }

    @Test func liftingABlackholeDuringADelayedConnectConnectsOnce() async throws {
        let server = try RecordingServer()
        defer { server.stop() }
        let faults = [FaultRule(.slowConnect(.milliseconds(400))), FaultRule(.blackhole, lasts: .milliseconds(150))]
        try await withRelay(upstream: server.endpoint, faults: faults) { _, endpoint in
            let (reply, seconds) = try await offload { () -> (String, Double) in
                let start = ContinuousClock.now
                let reply = try Self.roundTrip(BlockingSocket.connect(to: endpoint))
                return (reply, elapsed(since: start))
            }
            #expect(reply == "ping")
            #expect(seconds >= 0.39, "the blackhole lifting at 150 ms must not cut the 400 ms connect delay short, was \(seconds)")
            try await Task.sleep(for: .milliseconds(300))
            #expect(server.snapshot.count == 1, "one upstream connection, not one per wake-up")
        }
    }

    @Test func aClientLeavingDuringALongConnectDelayIsForgottenAtOnce() async throws {
        let server = try RecordingServer()
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint, faults: [FaultRule(.slowConnect(.seconds(60)))]) { relay, endpoint in
            // A client that gives up resets; a FIN alone could be a half-close still owed an answer.
            try await offload { try BlockingSocket.connect(to: endpoint).reset() }
            let closed = await relay.eventLog.waitFor(timeout: .seconds(3)) { $0.isClosed }
            #expect(closed != nil)
            #expect(relay.openConnectionCount == 0)
        }
    }

    @Test func faultAfterActsPerConnectionFromItsOpening() async throws {
        let server = try RecordingServer()
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint, faults: [FaultRule(.fin, trigger: .after(.milliseconds(300)))]) { _, endpoint in
            let seconds = try await offload { () -> Double in
                let socket = try BlockingSocket.connect(to: endpoint)
                let start = ContinuousClock.now
                _ = try Self.roundTrip(socket)
                let end = try socket.receive(timeout: .seconds(3))
                return end.isEmpty ? elapsed(since: start) : -1
            }
            #expect(seconds >= 0.28 && seconds < 2, "EOF about 300 ms after opening, was \(seconds)")
        }
    }

    @Test func targetNewSparesConnectionsAlreadyOpen() async throws {
        let server = try RecordingServer()
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint) { relay, endpoint in
            let old = try await offload { try BlockingSocket.connect(to: endpoint) }
            _ = try await offload { try Self.roundTrip(old) }
            try await relay.addFault(FaultRule(.rst, target: .new))
            let fresh = try await offload { () -> String in
                let socket = try BlockingSocket.connect(to: endpoint)
                do { _ = try socket.receive(timeout: .seconds(2)); return "no reset" } catch let f as SocketFailure { return "\(f)" }
            }
            #expect(fresh == "connection reset by peer")
            #expect(try await offload { try Self.roundTrip(old, "still") } == "still")
        }
    }

    @Test func probabilityDecisionsFollowTheSeed() async throws {
        let server = try RecordingServer()
        defer { server.stop() }
        func pattern(seed: UInt64) async throws -> [Bool] {
            try await withRelay(upstream: server.endpoint, seed: seed) { relay, endpoint in
                try await relay.addFault(FaultRule(.rst, target: .new, probability: .percent(50)))
                var outcomes: [Bool] = []
                for _ in 0..<24 {
                    outcomes.append(try await offload { () -> Bool in
                        let socket = try BlockingSocket.connect(to: endpoint)
                        return (try? Self.roundTrip(socket)) == "ping"
                    })
                }
                return outcomes
            }
        }
        let first = try await pattern(seed: 42)
        let again = try await pattern(seed: 42)
        let other = try await pattern(seed: 7)
        #expect(first == again, "same seed, same decisions")
        #expect(first != other, "another seed decides differently")
        #expect(first.contains(true) && first.contains(false))
    }

    @Test func refusedUpstreamResetsTheClient() async throws {
        // A port bound and not listening: no other test's server can be handed it.
        let refusing = try RefusingPort()
        try await withRelay(upstream: refusing.endpoint) { relay, endpoint in
            let failure = try await offload { () -> SocketFailure? in
                let socket = try BlockingSocket.connect(to: endpoint)
                do { _ = try socket.receive(timeout: .seconds(2)); return nil } catch let f as SocketFailure { return f }
            }
            #expect(failure == .reset)
            #expect(relay.eventLog.events.contains { $0.kind == .upstreamFailed(reason: .refused, detail: "connection refused") })
        }
    }

    @Test func totalLossMeansSilenceAndAConnectTimeout() async throws {
        let server = try RecordingServer()
        defer { server.stop() }
        let link = LinkProfile.named("100-loss")!.link
        try await withRelay(upstream: server.endpoint, link: link) { relay, endpoint in
            let outcome = try await offload { () -> SocketFailure? in
                let socket = try BlockingSocket.connect(to: endpoint)
                try socket.send("hello?")
                do { _ = try socket.receive(timeout: .milliseconds(800)); return nil } catch let f as SocketFailure { return f }
            }
            #expect(outcome == .timedOut)
            #expect(server.snapshot.isEmpty, "no connection reached upstream")
            #expect(relay.eventLog.events.contains {
                if case .faultFired("syn-loss", let detail) = $0.kind { detail.contains("times out after 127s") } else { false }
            })
        }
    }
}
