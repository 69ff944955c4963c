import Foundation
import NetsimCore
import NetsimLoopback
import Testing
@testable import NetsimPcap

/// The replay server, driven by plain sockets.
@Suite("replay")
struct ReplayTests {
    static func withReplay<T: Sendable>(
        _ plan: ReplayPlan, timing: ReplayTiming = .immediate, _ body: @escaping @Sendable (Endpoint) throws -> T
    ) async throws -> (T, [ReplayedRequest]) {
        let server = ReplayServer(plan: plan, timing: timing)
        let endpoint = try await server.start()
        do {
            let result = try await offload { try body(endpoint) }
            await server.stop()
            return (result, server.requests)
        } catch {
            await server.stop()
            throw error
        }
    }

    @Test func theFiveKeepAliveExchangesReplayByteForByteOnOneConnection() async throws {
        let plan = try ReplayPlan(capture: Capture.load(path: fixture("zeek-http-pipelined-requests.pcap")))
        let (answers, served) = try await Self.withReplay(plan) { endpoint in
            let socket = try BlockingSocket.connect(to: endpoint)
            defer { socket.close() }
            return try plan.exchanges.map { exchange in
                try socket.send(exchange.request)
                return try socket.receive(exactly: exchange.response.count)
            }
        }
        #expect(answers == plan.exchanges.map(\.response))
        #expect(served.map(\.target) == plan.exchanges.map(\.target))
        #expect(served.map(\.reusedConnection) == [false, true, true, true, true])
        #expect(Set(served.map(\.connection)).count == 1)
    }

    @Test func aRepeatedPathIsAnsweredInCaptureOrderAcrossConnections() async throws {
        let plan = try ReplayPlan(capture: Capture.load(path: fixture("zeek-http-206_example_c.pcap")))
        let target = plan.exchanges[0].target
        let request = Array("GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        let (answers, served) = try await Self.withReplay(plan) { endpoint in
            try (0..<4).map { _ in
                let socket = try BlockingSocket.connect(to: endpoint)
                defer { socket.close() }
                try socket.send(request)
                return try readResponse(socket)
            }
        }
        #expect(answers == plan.exchanges.prefix(4).map(\.response))
        #expect(served.map { "\($0.flow!)#\($0.exchange!)" } == plan.exchanges.prefix(4).map { "\($0.flow)#\($0.index)" })
    }

    /// A request for a byte range gets the answer captured for that range, whatever order the
    /// client asks in (a download resumed at another offset). Before, it got the next answer in
    /// capture order: another range's bytes. A range the capture never asked for still does.
    @Test func aRangeRequestGetsTheAnswerCapturedForThatRange() async throws {
        let plan = try ReplayPlan(capture: Capture.load(path: fixture("zeek-http-206_example_c.pcap")))
        let ranged = plan.exchanges.compactMap { exchange in HTTPFraming.head(exchange.request[...])?.field("Range").map { (exchange, $0) } }
        try #require(ranged.count > 6)
        let picks = [ranged[6], ranged[2], ranged[6]]  // out of capture order, one twice
        let (answers, served) = try await Self.withReplay(plan) { endpoint in
            let socket = try BlockingSocket.connect(to: endpoint)
            defer { socket.close() }
            var answers: [[UInt8]] = []
            for (exchange, range) in picks {
                try socket.send(Array("GET \(exchange.target) HTTP/1.1\r\nHost: x\r\nRange: \(range)\r\n\r\n".utf8))
                answers.append(try readResponse(socket))
            }
            try socket.send(Array("GET \(plan.exchanges[0].target) HTTP/1.1\r\nHost: x\r\nRange: bytes=7-8\r\n\r\n".utf8))
            answers.append(try readResponse(socket))
            return answers
        }
        #expect(answers.prefix(3).elementsEqual(picks.map(\.0.response)))
        #expect(served.prefix(3).map { "\($0.flow!)#\($0.exchange!)" } == picks.map { "\($0.0.flow)#\($0.0.index)" })
        #expect(answers.last == plan.exchanges[0].response, "an uncaptured range falls back to capture order")
    }

    /// A request that asks to close (`Connection: close`, HTTP/1.0) gets its answer and the
    /// close, whatever the captured answer says: a client reading to the end waited for good
    /// (QA 68). A request pipelined after it is not answered.
    @Test(arguments: ["HTTP/1.1\r\nConnection: close", "HTTP/1.0"])
    func aRequestThatAsksToCloseGetsItsAnswerThenTheClose(_ ending: String) async throws {
        let plan = try ReplayPlan(capture: Capture.load(path: fixture("zeek-http-get.pcap")))
        let (answers, served) = try await Self.withReplay(plan) { endpoint in
            try ["/download/CHANGES.bro-aux.txt", "/nothing"].map { path in
                let socket = try BlockingSocket.connect(to: endpoint)
                defer { socket.close() }
                try socket.send("GET \(path) \(ending)\r\nHost: x\r\n\r\nGET \(path) HTTP/1.1\r\nHost: x\r\n\r\n")
                return try socket.receiveToEnd(timeout: .seconds(5))
            }
        }
        #expect(answers[0] == plan.exchanges[0].response, "the captured answer alone, then the close")
        #expect(String(decoding: answers[1], as: UTF8.self).hasPrefix("HTTP/1.1 404 "))
        #expect(served.map(\.status) == [200, 404])
    }

    /// What `--list` and the notes say of a capture (QA 68): a range answer names its range (the
    /// 206 capture listed 34 alike lines); a TLS flow is said not to replay (curl hung on it);
    /// a capture with no TCP says what its packets were.
    @Test func theListingNamesRangesTLSFlowsAndWhatACaptureWithoutTCPHolds() throws {
        let ranges = try ReplayPlan(capture: Capture.load(path: fixture("zeek-http-206_example_c.pcap")))
        #expect(ranges.listing.contains { $0.contains("(Range: bytes=") && $0.contains("→ 206") }, "\(ranges.listing.prefix(3))")
        let folder = NSTemporaryDirectory() + "netsim-listing-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let tls = try CaptureBuilder(path: folder + "/tls.pcap")
        tls.write([segment(clientEnd, serverEnd, seq: 1, [0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5]),
                   segment(serverEnd, clientEnd, seq: 1, ack: 11, [0x16, 0x03, 0x03, 0x00, 0x01, 9])])
        tls.close()
        let plan = try ReplayPlan(capture: Capture.load(path: tls.path))
        #expect(plan.notes.contains { $0.hasPrefix("flow 1 starts with a TLS ClientHello: TLS cannot be replayed byte for byte") }, "\(plan.notes)")
        let udp = try CaptureBuilder(path: folder + "/udp.pcap")
        var datagram = segment(clientEnd, serverEnd, seq: 1, [1, 2, 3])
        datagram[9] = 17  // IPv4's protocol: UDP
        udp.write([datagram, datagram])
        udp.close()
        #expect(throws: PcapError.self) { _ = try FlowSelector.all.select(from: Capture.load(path: udp.path)) }
        do { _ = try FlowSelector.all.select(from: Capture.load(path: udp.path)) } catch {
            #expect("\(error)".hasSuffix("no TCP flows in 2 packets (2 not TCP)"), "\(error)")
        }
    }

    @Test func anUnknownRequestGetsA404AndTheConnectionStaysUsable() async throws {
        let plan = try ReplayPlan(capture: Capture.load(path: fixture("zeek-http-get.pcap")))
        let (texts, served) = try await Self.withReplay(plan) { endpoint in
            let socket = try BlockingSocket.connect(to: endpoint)
            defer { socket.close() }
            try socket.send("GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n")
            let missing = try readResponse(socket)
            try socket.send("GET /download/CHANGES.bro-aux.txt?v=2 HTTP/1.1\r\nHost: x\r\n\r\n")
            let found = try readResponse(socket)
            return (String(decoding: missing, as: UTF8.self), found)
        }
        #expect(texts.0.hasPrefix("HTTP/1.1 404 "))
        #expect(texts.1 == plan.exchanges[0].response, "falls back to the path without the query")
        #expect(served.map(\.status) == [404, 200])
    }

    @Test func theServersFINAfterA503IsReplayedAndIdleResetsFollowTheTiming() async throws {
        let fin = try ReplayPlan(capture: Capture.load(path: fixture("pcpp-one_http_stream_rst.pcap")))
        let (tail, _) = try await Self.withReplay(fin) { endpoint in
            let socket = try BlockingSocket.connect(to: endpoint)
            defer { socket.close() }
            try socket.send(fin.exchanges[0].request)
            return try socket.receiveToEnd(timeout: .seconds(5))
        }
        #expect(tail == fin.exchanges[0].response, "answer, then EOF")

        // The idle RST 9.1 s after the answer, at 20× speed: about 455 ms.
        let idle = try ReplayPlan(capture: Capture.load(path: fixture("arkime-http-wrapped-header.pcap")))
        let (outcome, _) = try await Self.withReplay(idle, timing: ReplayTiming(speed: 20)) { endpoint in
            let socket = try BlockingSocket.connect(to: endpoint)
            defer { socket.close() }
            try socket.send(idle.exchanges[0].request)
            let start = ContinuousClock.now
            _ = try socket.receive(exactly: idle.exchanges[0].response.count)
            do {
                _ = try socket.receiveToEnd(timeout: .seconds(5))
                return ("eof", ContinuousClock.now - start)
            } catch let failure as SocketFailure where failure == .reset {
                return ("reset", ContinuousClock.now - start)
            }
        }
        #expect(outcome.0 == "reset")
        #expect(outcome.1 >= .milliseconds(400) && outcome.1 < .seconds(3), "reset after \(outcome.1)")
    }

    /// A server that answered 256 KiB and reset the connection 1 ms later (its client had the
    /// whole answer by then): a client that reads slowly, through a small receive buffer, still
    /// gets every byte before the reset. The replay reset as soon as its writes were handed to
    /// the kernel, and SO_LINGER 0 discarded what the kernel still held: the client got 32 KiB.
    /// The client's handshake (client ISN 100, server ISN 5000) and its request: the server's
    /// answer starts at sequence number 5001.
    static func openAndAsk(_ builder: CaptureBuilder, _ request: [UInt8]) {
        builder.write([segment(clientEnd, serverEnd, seq: 100, flags: .syn)])
        builder.write([segment(serverEnd, clientEnd, seq: 5000, ack: 101, flags: [.syn, .ack])])
        builder.write([segment(clientEnd, serverEnd, seq: 101, ack: 5001, flags: .ack)])
        builder.write([segment(clientEnd, serverEnd, seq: 101, ack: 5001, request)])
    }

    /// A relay's capture (netsim records both legs) has each exchange twice, to two servers:
    /// replaying all of it serves every answer twice, so the plan says so and how to pick one.
    /// Raw (non-HTTP) flows the same: they were listed with no word of it (QA 54).
    @Test(arguments: [true, false])
    func answersFromTwoServersAreNotedWithHowToPickOne(http: Bool) throws {
        let builder = try CaptureBuilder(path: temporaryPath("legs.pcap"))
        defer { try? FileManager.default.removeItem(atPath: builder.path) }
        let request = http ? Array("GET /x HTTP/1.1\r\nHost: x\r\n\r\n".utf8) : Array("HELO x\r\n".utf8)
        let answer = http ? Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8) : Array("250 ok\r\n".utf8)
        let relayEnd = PacketEndpoint(address: [10, 0, 0, 3], port: 40_001)
        let upstreamEnd = PacketEndpoint(address: [10, 0, 0, 4], port: 8080)
        for (client, server) in [(clientEnd, serverEnd), (relayEnd, upstreamEnd)] {
            builder.write([segment(client, server, seq: 100, flags: .syn)])
            builder.write([segment(server, client, seq: 5000, ack: 101, flags: [.syn, .ack])])
            builder.write([segment(client, server, seq: 101, ack: 5001, request)])
            builder.write([segment(server, client, seq: 5001, ack: 101 + UInt32(request.count), answer)])
        }
        builder.close()
        let capture = try Capture.load(path: builder.path)
        let both = try ReplayPlan(capture: capture)
        #expect(both.exchanges.count + both.raw.count == 2)
        #expect(both.notes.contains { $0.contains("come from 2 servers (10.0.0.2:80, 10.0.0.4:8080)") && $0.contains("--flow :PORT") }, "\(both.notes)")
        let one = try ReplayPlan(capture: capture, flows: FlowSelector(parsing: ":8080"))
        #expect(one.exchanges.count + one.raw.count == 1 && !one.notes.contains { $0.contains("servers") }, "\(one.notes)")
    }

    /// A segment the capture never had (lost before the capture point, or dropped by it) is
    /// not made up: the answer stops before it, with a reset. Replay served it as zeros inside a
    /// 200 (1448 NUL bytes in a helper's run; a 1.4 MB run of them in a live capture). A gap at
    /// the answer's very start (its status line) is a reset with nothing before it: it was "no
    /// answer", and the client waited for ever (QA 54).
    @Test(arguments: [2, 0])
    func bytesTheCaptureNeverHadAreNotServed(missingPiece: Int) async throws {
        let builder = try CaptureBuilder(path: temporaryPath("gap.pcap"))
        defer { try? FileManager.default.removeItem(atPath: builder.path) }
        let body = (0..<8000).map { UInt8(truncatingIfNeeded: $0 &* 7 | 1) }  // no zero byte
        let request = Array("GET /gap HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        let answer = Array("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
        Self.openAndAsk(builder, request)
        for (index, offset) in stride(from: 0, to: answer.count, by: 1400).enumerated() where index != missingPiece {
            let piece = Array(answer[offset..<min(answer.count, offset + 1400)])
            builder.write([segment(serverEnd, clientEnd, seq: 5001 + UInt32(offset), ack: 101 + UInt32(request.count), piece)])
        }
        builder.close()
        let plan = try ReplayPlan(capture: Capture.load(path: builder.path))
        let cut = missingPiece * 1400
        #expect(plan.exchanges.first?.uncapturedFrom == cut, "\(plan.exchanges.map(\.uncapturedFrom))")
        if cut > 0 {
            #expect(plan.notes.contains { $0.contains("the answer's bytes from \(cut) of \(answer.count) were never captured") }, "\(plan.notes)")
            #expect(plan.listing.first?.hasSuffix("(bytes from \(cut) never captured: served up to them, then reset)") == true, "\(plan.listing)")
        } else {
            #expect(plan.notes.contains { $0.contains("the answer's start was never captured") }, "\(plan.notes)")
            #expect(!plan.notes.contains { $0.contains("never answered") }, "\(plan.notes)")
            #expect(plan.listing.first?.hasSuffix("→ an answer whose start was never captured, \(answer.count) bytes, think 0.0 ms (replayed as a reset)") == true, "\(plan.listing)")
        }
        let (outcome, _) = try await Self.withReplay(plan) { endpoint in
            let socket = try BlockingSocket.connect(to: endpoint)
            defer { socket.close() }
            try socket.send(request)
            var got: [UInt8] = []
            do {
                while true {
                    let chunk = try socket.receive(maximum: 64 * 1024)
                    if chunk.isEmpty { return (got, "eof") }
                    got += chunk
                }
            } catch let failure as SocketFailure where failure == .reset {
                return (got, "reset")
            }
        }
        #expect(outcome.1 == "reset")
        #expect(outcome.0 == Array(answer[..<cut]), "\(outcome.0.count) bytes, \(outcome.0.filter { $0 == 0 }.count) of them zero")
    }

    @Test func aResetAfterALargeAnswerWaitsUntilTheClientHasItAll() async throws {
        let builder = try CaptureBuilder(path: temporaryPath("answer-then-rst.pcap"))
        defer { try? FileManager.default.removeItem(atPath: builder.path) }
        let body = (0..<(256 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let request = Array("GET /big HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        let answer = Array("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
        Self.openAndAsk(builder, request)
        var offset = 0
        while offset < answer.count {
            let piece = Array(answer[offset..<min(answer.count, offset + 1400)])
            builder.write([segment(serverEnd, clientEnd, seq: 5001 + UInt32(offset), ack: 101 + UInt32(request.count), piece)])
            offset += piece.count
        }
        builder.advance(1_000_000)
        builder.write([segment(serverEnd, clientEnd, seq: 5001 + UInt32(answer.count), ack: 101 + UInt32(request.count), flags: .rst)])
        builder.close()
        let plan = try ReplayPlan(capture: Capture.load(path: builder.path))
        #expect(plan.exchanges.first?.response == answer, "the capture's answer")
        let (got, _) = try await Self.withReplay(plan) { endpoint in
            let socket = try BlockingSocket.connect(to: endpoint)
            defer { socket.close() }
            socket.setBuffer(receive: 16 * 1024)
            try socket.send(request)
            var got: [UInt8] = []
            while got.count < answer.count {
                let chunk = try socket.receive(maximum: 64 * 1024)  // a reset before the end throws
                if chunk.isEmpty { break }
                got += chunk
            }
            return got
        }
        #expect(got.count == answer.count && got == answer, "\(got.count) of \(answer.count) bytes before the reset")
    }

    @Test func originalTimingWaitsTheThinkTimeAndSpeedScalesIt() async throws {
        let exchange = CapturedExchange(
            flow: 1, index: 1, method: "GET", target: "/slow", status: 200, request: [],
            response: Array("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nslow".utf8), responseEndsAtClose: false,
            thinkTime: 300_000_000, pacing: [(0, 0), (20, 100_000_000)], serverClose: nil, requestTime: 0)
        let plan = ReplayPlan(exchanges: [exchange], raw: [])
        func elapsed(_ timing: ReplayTiming) async throws -> Duration {
            try await Self.withReplay(plan, timing: timing) { endpoint in
                let socket = try BlockingSocket.connect(to: endpoint)
                defer { socket.close() }
                let start = ContinuousClock.now
                try socket.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
                _ = try socket.receive(exactly: exchange.response.count)
                return ContinuousClock.now - start
            }.0
        }
        let immediate = try await elapsed(.immediate)
        let original = try await elapsed(.original)
        let double = try await elapsed(ReplayTiming(speed: 2))
        #expect(immediate < .milliseconds(250))
        #expect(original >= .milliseconds(395) && original < .milliseconds(1500), "think 300 ms + pacing 100 ms: \(original)")
        #expect(double >= .milliseconds(195) && double < original, "twice as fast: \(double)")
    }

    @Test func aRawConversationIsReplayedTurnByTurnWithTheServerSpeakingFirst() async throws {
        let builder = try CaptureBuilder(path: temporaryPath("raw.pcap"))
        defer { try? FileManager.default.removeItem(atPath: builder.path) }
        let server = PacketEndpoint(address: [10, 0, 0, 2], port: 2525)
        var tcp = SyntheticConnection(initiator: clientEnd, responder: server, initialSequence: 1)
        builder.write(tcp.handshake())
        for (fromServer, text) in [(true, "220 hello\r\n"), (false, "HELO me\r\n"), (true, "250 ok\r\n"), (false, "QUIT\r\n"), (true, "221 bye\r\n")] {
            builder.advance(1_000_000)
            builder.write(Array(text.utf8).withUnsafeBytes { tcp.data(from: fromServer ? .responder : .initiator, $0) })
        }
        builder.write(tcp.fin(from: .responder))
        builder.close()
        let plan = try ReplayPlan(capture: Capture.load(path: builder.path))
        #expect(plan.exchanges.isEmpty && plan.raw.count == 1)
        let (transcript, _) = try await Self.withReplay(plan) { endpoint in
            let socket = try BlockingSocket.connect(to: endpoint)
            defer { socket.close() }
            var heard = try socket.receive(exactly: 11)
            try socket.send("HELO me\r\n")
            heard += try socket.receive(exactly: 8)
            try socket.send("QUIT\r\n")
            heard += try socket.receiveToEnd()
            return String(decoding: heard, as: UTF8.self)
        }
        #expect(transcript == "220 hello\r\n250 ok\r\n221 bye\r\n")
    }

    /// A client that sent `Expect: 100-continue` waits for the captured `100 Continue` before it
    /// sends the body. Replay held it back until the body came: curl went on after its
    /// one-second fallback, a client without one waited forever.
    @Test func aCaptured100ContinueGoesOutOnceTheHeadIsIn() async throws {
        let builder = try CaptureBuilder(path: temporaryPath("continue.pcap"))
        defer { try? FileManager.default.removeItem(atPath: builder.path) }
        var tcp = SyntheticConnection(initiator: clientEnd, responder: PacketEndpoint(address: [10, 0, 0, 2], port: 80), initialSequence: 1)
        builder.write(tcp.handshake())
        let head = "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"
        let interim = "HTTP/1.1 100 Continue\r\n\r\n"
        let final = "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok"
        for (fromServer, text) in [(false, head), (true, interim), (false, "hello"), (true, final)] {
            builder.advance(10_000_000)
            builder.write(Array(text.utf8).withUnsafeBytes { tcp.data(from: fromServer ? .responder : .initiator, $0) })
        }
        builder.close()
        let plan = try ReplayPlan(capture: Capture.load(path: builder.path))
        #expect(plan.exchanges.map(\.earlyAnswer) == [interim.utf8.count])
        let (heard, served) = try await Self.withReplay(plan) { endpoint in
            let waiting = try BlockingSocket.connect(to: endpoint)
            defer { waiting.close() }
            try waiting.send(head)
            let first = try waiting.receive(exactly: interim.utf8.count, timeout: .seconds(5))
            try waiting.send("hello")
            let rest = try waiting.receive(exactly: final.utf8.count)
            // A client that sends head and body at once gets the answer as captured.
            let eager = try BlockingSocket.connect(to: endpoint)
            defer { eager.close() }
            try eager.send(head + "hello")
            let whole = try eager.receive(exactly: interim.utf8.count + final.utf8.count)
            return [first, rest, whole].map { String(decoding: $0, as: UTF8.self) }
        }
        #expect(heard == [interim, final, interim + final])
        #expect(served.map(\.bodyBytes) == [5, 5])
    }
}

/// Reads one HTTP response with a Content-Length.
func readResponse(_ socket: BlockingSocket) throws -> [UInt8] {
    var bytes: [UInt8] = []
    for _ in 0..<1000 {
        if let head = HTTPFraming.head(bytes[...]), bytes.count >= head.length + (head.contentLength ?? 0) {
            return bytes
        }
        bytes += try socket.receive(timeout: .seconds(5))
    }
    return bytes
}
