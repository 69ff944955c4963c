import Foundation
import NIOCore
import NetsimCore
import NetsimLink
import NetsimLoopback
import NetsimRelay
import NetsimRunner
import NetsimScenario
import Testing
@testable import NetsimPcap

/// Recording a relay: both legs as real-looking TCP, read back with libpcap and with tshark.
@Suite("pcap recording")
struct RecorderTests {
    /// Relays through a recording relay, runs `client` against it, waits until the relay has
    /// closed `connections` connections, and returns the capture file.
    static func record(
        link: LinkConfiguration = .unimpaired, faults: [FaultRule] = [], upstream: Endpoint, connections: Int = 1,
        _ client: @escaping @Sendable (Endpoint) throws -> Void
    ) async throws -> String {
        let path = temporaryPath("recording.pcap")
        let recorder = try PcapRecorder(path: path)
        let log = EventLog()
        let events = EventWaiter(log: log)
        let relay = Relay(configuration: RelayConfiguration(upstream: upstream, link: link, faults: faults), eventLog: log, tap: recorder)
        let endpoint = try await relay.start()
        do {
            try await offload { try client(endpoint) }
        } catch {
            await relay.stop()
            recorder.close()
            throw error
        }
        let ended = await events.count(connections) { if case .closed = $0.kind { true } else { false } }
        #expect(ended, "\(connections) relayed connection(s) closed")
        await relay.stop()
        recorder.close()
        return path
    }

    @Test func bothLegsAreTCPConversationsWithTheExactBytesAndNothingForWiresharkToFlag() async throws {
        let server = try LoopbackServer.echo()
        defer { server.stop() }
        let request = [UInt8](text: "GET /feed HTTP/1.1\r\nHost: x\r\n\r\n")
        let path = try await Self.record(upstream: server.endpoint) { endpoint in
            let socket = try BlockingSocket.connect(to: endpoint)
            try socket.send(request)
            _ = try socket.receive(exactly: request.count)
            socket.shutdownWrite()
            _ = try socket.receiveToEnd()
            socket.close()
        }
        defer { try? FileManager.default.removeItem(atPath: path) }

        // In-process, through libpcap.
        let capture = try Capture.load(path: path)
        #expect(capture.linkTypeName.contains("RAW"))
        #expect(capture.flows.count == 2)
        for flow in capture.flows {
            #expect(flow.clientFromHandshake)
            #expect(flow.request.bytes == request)
            #expect(flow.response.bytes == request)
            #expect(SequenceAnalysis(flow).flags.allSatisfy { $0.isEmpty })
            #expect(FlowProfile(flow).close.first?.kind == .fin)
        }
        let relayPort = UInt16(capture.flows[0].server.port)
        #expect(capture.flows.contains { $0.server.port == UInt16(server.endpoint.port) }, "the upstream leg ends at the upstream's port")
        #expect(relayPort != UInt16(server.endpoint.port), "the client leg ends at the relay's port")

        // tshark: two conversations, the exact bytes each way, no analysis flags, valid checksums.
        #expect(try await Tshark.conversations(path).count == 2)
        for stream in 0..<2 {
            let (first, second) = try await Tshark.follow(path, stream: stream)
            #expect(first == request)
            #expect(second == request)
        }
        #expect(try await Tshark.run(["-r", path, "-Y", "tcp.analysis.flags"]).isEmpty)
        let badChecksums = try await Tshark.run([
            "-r", path, "-o", "ip.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE",
            "-Y", "ip.checksum.status != 1 or tcp.checksum.status != 1",
        ])
        #expect(badChecksums.isEmpty, "every IPv4 and TCP checksum verifies: \(badChecksums)")
        let handshakes = try await Tshark.fields(path, filter: "tcp.flags.syn == 1 and tcp.flags.ack == 0", ["tcp.stream"])
        #expect(handshakes.count == 2)
    }

    @Test func largeTransfersAreSegmentedAndReassembleExactly() async throws {
        let server = try LoopbackServer.echo()
        defer { server.stop() }
        var random = SeededRandom(seed: 5)
        let payload = (0..<300_000).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        let path = try await Self.record(upstream: server.endpoint) { endpoint in
            let socket = try BlockingSocket.connect(to: endpoint)
            try socket.send(payload)
            socket.shutdownWrite()
            let echoed = try socket.receiveToEnd()
            guard echoed.count == payload.count else { throw SocketFailure.other(errno: EIO) }
            socket.close()
        }
        defer { try? FileManager.default.removeItem(atPath: path) }
        let capture = try Capture.load(path: path)
        #expect(capture.flows.count == 2)
        for flow in capture.flows {
            #expect(flow.request.bytes == payload)
            #expect(flow.response.bytes == payload)
            #expect(flow.packets.allSatisfy { $0.payloadLength <= SyntheticPacket.maximumPayload })
        }
        let (first, second) = try await Tshark.follow(path, stream: 1)
        #expect(first == payload && second == payload)
        #expect(try await Tshark.run(["-r", path, "-Y", "tcp.analysis.flags"]).isEmpty)
    }

    @Test func aClientResetShowsAsRSTFromTheClientAndThenFromTheRelayUpstream() async throws {
        let server = try LoopbackServer.echo()
        defer { server.stop() }
        let path = try await Self.record(upstream: server.endpoint) { endpoint in
            let socket = try BlockingSocket.connect(to: endpoint)
            try socket.send("ping")
            _ = try socket.receive(exactly: 4)
            socket.reset()
        }
        defer { try? FileManager.default.removeItem(atPath: path) }
        let capture = try Capture.load(path: path)
        #expect(capture.flows.count == 2)
        let clientLeg = try #require(capture.flows.first { $0.server.port != UInt16(server.endpoint.port) })
        let upstreamLeg = try #require(capture.flows.first { $0.server.port == UInt16(server.endpoint.port) })
        #expect(FlowProfile(clientLeg).close.first == CloseSummary.Step(fromClient: true, kind: .rst, time: FlowProfile(clientLeg).close.first!.time))
        // The relay forwards the reset: the upstream leg's RST comes from the relay (its client end).
        #expect(FlowProfile(upstreamLeg).close.first?.kind == .rst)
        #expect(FlowProfile(upstreamLeg).close.first?.fromClient == true)
        let resets = try await Tshark.fields(path, filter: "tcp.flags.reset == 1", ["tcp.srcport"])
        #expect(resets.count == 2)
    }

    /// The relay passed the server's FIN on, and the client has not closed: a reset then is on
    /// the wire (the client reads ECONNRESET), after the FIN. The capture ended with the FIN
    /// (QA 54), and Wireshark showed a download that finished cleanly.
    @Test func aResetAfterTheRelaysFINIsInTheCaptureAsTheClientSawIt() async throws {
        let server = try LoopbackServer { socket in
            _ = try? socket.receive()
            try? socket.send("answer")
            socket.shutdownWrite()
            _ = try? socket.receiveToEnd()
        }
        defer { server.stop() }
        let path = try await Self.record(faults: [FaultRule(.rst, trigger: .after(.milliseconds(300)))], upstream: server.endpoint) { endpoint in
            let socket = try BlockingSocket.connect(to: endpoint)
            try socket.send("ask")
            #expect(try socket.receiveToEnd() == Array("answer".utf8))
            // The client keeps its side open until the fault's reset ends the connection (a
            // reset socket hangs up; one that only read the FIN does not).
            var poller = pollfd(fd: socket.fd, events: 0, revents: 0)
            #expect(poll(&poller, 1, 10_000) == 1 && poller.revents & Int16(POLLHUP) != 0, "no reset came")
        }
        defer { try? FileManager.default.removeItem(atPath: path) }
        let capture = try Capture.load(path: path)
        let clientLeg = try #require(capture.flows.first { $0.server.port != UInt16(server.endpoint.port) })
        let flags = clientLeg.packets.filter { !$0.fromClient && !$0.flags.isDisjoint(with: [.fin, .rst]) }.map(\.flags)
        #expect(flags.count == 2 && flags.first?.contains(.fin) == true && flags.last?.contains(.rst) == true, "\(flags)")
    }

    /// A run's capture ends every conversation as it ended: the client's close crosses the link
    /// after the client has shut down, and the server's FIN answers it. The run stopped its relay
    /// at once, which closed both legs itself, so every capture of a run ended with the server's
    /// FIN missing (QA 54).
    @Test func aRunsCaptureHasBothSidesCloseOnEveryLeg() async throws {
        let path = temporaryPath("run.pcap")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let parsed = try ScenarioParser.parse(source: """
            name: closes
            description: Two requests over a link with latency; the capture shows every close.
            link:
              latency: 50ms
            upstream:
              routes:
                - path: /a
            client:
              driver: naive
            timeline:
              - request: a
                path: /a
                count: 2
            expect:
              - request: a
                status: 200
            """, file: "closes.scn")
        let result = try await ScenarioRunner.run(parsed, options: RunOptions(pcapPath: path))
        #expect(result.passed, "\(TextReport.render(result))")
        let flows = try Capture.load(path: path).flows
        #expect(flows.count >= 2, "a client leg and an upstream leg")
        for flow in flows {
            let close = FlowProfile(flow).close
            #expect(close.first?.kind == .fin && close.second?.kind == .fin && close.first?.fromClient != close.second?.fromClient,
                    "flow \(flow.number) (\(flow.client) → \(flow.server)): \(close.description)")
        }
    }

    @Test func timestampsShowWhenBytesCrossedEachSocketAfterTheDelay() async throws {
        let server = try LoopbackServer.echo()
        defer { server.stop() }
        var link = LinkConfiguration.unimpaired
        link.up.latency = .milliseconds(80)
        let path = try await Self.record(link: link, upstream: server.endpoint) { endpoint in
            let socket = try BlockingSocket.connect(to: endpoint)
            try socket.send("hello")
            _ = try socket.receive(exactly: 5)
            socket.shutdownWrite()
            _ = try socket.receiveToEnd()
        }
        defer { try? FileManager.default.removeItem(atPath: path) }
        let capture = try Capture.load(path: path)
        let clientLeg = try #require(capture.flows.first { $0.server.port != UInt16(server.endpoint.port) })
        let upstreamLeg = try #require(capture.flows.first { $0.server.port == UInt16(server.endpoint.port) })
        let arrived = try #require(clientLeg.request.chunks.first?.time)
        let forwarded = try #require(upstreamLeg.request.chunks.first?.time)
        #expect(forwarded - arrived >= 79_000_000, "the upstream leg shows the bytes \(forwarded - arrived) ns later")
        // Wall-clock timestamps: within a minute of now.
        let now = Int64(Date().timeIntervalSince1970 * 1e9)
        #expect(abs(now - arrived) < 60_000_000_000)
        // The handshakes are made up, so a round trip inferred from them is 0: profile says it
        // cannot infer one (it suggested `latency: 100us` for an 80 ms link), while a real
        // capture still gives its own.
        let profiles = capture.flows.map(FlowProfile.init)
        #expect(LinkSuggestion.handshakesMadeUp(profiles))
        #expect(LinkSuggestion(profiles).roundTrip == nil)
        #expect(LinkSuggestion(profiles).scn(capture: "r.pcap").contains("# set latency by hand: every handshake took 0 s"))
        let real = try Capture.load(path: fixture("zeek-http-get.pcap")).flows.map(FlowProfile.init)
        #expect(!LinkSuggestion.handshakesMadeUp(real) && LinkSuggestion(real).roundTrip != nil)
    }

    /// netsim's own recording runs each upstream leg unshaped on loopback: its bursts are not
    /// the link's rate, and `profile --scn` suggested gigabits for an 8 Mbit/s download.
    @Test func aRecordingSuggestsNoBandwidth() async throws {
        let server = try LoopbackServer.echo()
        defer { server.stop() }
        var link = LinkConfiguration.unimpaired
        link.down.bandwidth = .mbit(8)
        let size = 100 * 1024
        let path = try await Self.record(link: link, upstream: server.endpoint) { endpoint in
            let socket = try BlockingSocket.connect(to: endpoint)
            try socket.send([UInt8](repeating: 7, count: size))
            _ = try socket.receive(exactly: size)
            socket.shutdownWrite()
            _ = try socket.receiveToEnd()
        }
        defer { try? FileManager.default.removeItem(atPath: path) }
        let profiles = try Capture.load(path: path).flows.map(FlowProfile.init)
        #expect(profiles.contains { $0.toClient.largestBurst >= LinkSuggestion.minimumBurst }, "a burst long enough to measure")
        let suggestion = LinkSuggestion(profiles)
        #expect(suggestion.upBandwidth == nil && suggestion.downBandwidth == nil, "\(suggestion.scn(capture: "r.pcap"))")
        let block = suggestion.scn(capture: "r.pcap")
        #expect(block.contains("# set bandwidth by hand too"))
        // Nothing but comments under it: `link: {}`, so the block pasted into a scenario parses
        // (a bare `link:` was "'link' must be a mapping, found nothing").
        #expect(block.contains("\nlink: {}\n"), "\(block)")
        _ = try ScenarioParser.parse(source: CommandTests.scenario(name: "pasted", upstream: "address: 127.0.0.1:9", link: block), file: "pasted.scn")
    }

    @Test func concurrentConnectionsFromSeveralEventLoopsEachGetTwoConversations() async throws {
        let server = try LoopbackServer.echo()
        defer { server.stop() }
        let path = try await Self.record(upstream: server.endpoint, connections: 6) { endpoint in
            let group = DispatchGroup()
            let failures = NSLock()
            nonisolated(unsafe) var failed = 0
            for i in 0..<6 {
                group.enter()
                DispatchQueue.global().async {
                    defer { group.leave() }
                    do {
                        let socket = try BlockingSocket.connect(to: endpoint)
                        try socket.send("connection \(i)")
                        _ = try socket.receive(exactly: "connection \(i)".utf8.count)
                        socket.shutdownWrite()
                        _ = try socket.receiveToEnd()
                    } catch {
                        failures.withLock { failed += 1 }
                    }
                }
            }
            guard group.wait(timeout: .now() + 10) == .success, failed == 0 else { throw SocketFailure.other(errno: EIO) }
        }
        defer { try? FileManager.default.removeItem(atPath: path) }
        let capture = try Capture.load(path: path)
        #expect(capture.flows.count == 12)
        #expect(Set(capture.flows.map { String(decoding: $0.request.bytes, as: UTF8.self) }).count == 6)
        #expect(try await Tshark.conversations(path).count == 12)
        #expect(try await Tshark.run(["-r", path, "-Y", "tcp.analysis.flags"]).isEmpty)
    }

    @Test func ipv6LegsAreWrittenAsIPv6WithValidChecksums() async throws {
        let path = temporaryPath("v6.pcap")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let recorder = try PcapRecorder(path: path)
        let id = ConnectionID(1)
        let client = try SocketAddress(ipAddress: "2001:db8::1", port: 50_000)
        let relay = try SocketAddress(ipAddress: "2001:db8::2", port: 8080)
        var buffer = ByteBufferAllocator().buffer(capacity: 5)
        buffer.writeString("hello")
        recorder.legOpened(id, leg: .client, local: relay, remote: client, at: 1_000)
        recorder.received(id, leg: .client, buffer, at: 2_000)
        recorder.sent(id, leg: .client, buffer, at: 3_000)
        recorder.ended(id, leg: .client, .fin, fromPeer: true, at: 4_000)
        recorder.ended(id, leg: .client, .fin, fromPeer: false, at: 5_000)
        recorder.close()
        let capture = try Capture.load(path: path)
        #expect(capture.flows.count == 1)
        #expect(capture.flows[0].client.isIPv6 && capture.flows[0].client.description == "[2001:db8::1]:50000")
        #expect(capture.flows[0].request.bytes == [UInt8](text: "hello"))
        #expect(try await Tshark.fields(path, filter: "ipv6 and tcp", ["tcp.stream"]).count == capture.flows[0].packets.count)
        let bad = try await Tshark.run(["-r", path, "-o", "tcp.check_checksum:TRUE", "-Y", "tcp.checksum.status != 1 or tcp.analysis.flags"])
        #expect(bad.isEmpty)
    }

    /// Event loops report out of time order: here connection 2's packets, stamped before
    /// connection 1's, arrive after them. The file is in time order all the same (it had them in
    /// arrival order, time going back up to 9 ms), and each conversation keeps its own order.
    @Test func packetsFromSeveralLoopsAreWrittenInTimeOrder() async throws {
        let path = temporaryPath("ordered.pcap")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let recorder = try PcapRecorder(path: path)
        let relay = try SocketAddress(ipAddress: "127.0.0.1", port: 8080)
        var buffer = ByteBufferAllocator().buffer(capacity: 5)
        buffer.writeString("hello")
        for (id, start) in [(1, 10_000_000), (2, 5_000_000)] as [(UInt64, Int64)] {
            let connection = ConnectionID(id)
            let client = try SocketAddress(ipAddress: "127.0.0.1", port: 50_000 + Int(id))
            recorder.legOpened(connection, leg: .client, local: relay, remote: client, at: start)
            recorder.received(connection, leg: .client, buffer, at: start + 1_000_000)
            recorder.sent(connection, leg: .client, buffer, at: start + 8_000_000)
        }
        recorder.close()
        let times = try await Tshark.fields(path, filter: "tcp", ["frame.time_epoch", "tcp.srcport"])
        #expect(times.count == 2 * 7, "\(times)")  // each: a handshake of 3, then data and its ACK twice
        let seconds = times.compactMap { Double($0[0]) }
        #expect(seconds == seconds.sorted(), "\(times)")
        #expect(times.first?[1] == "50002", "connection 2's SYN is the earliest packet")
        let capture = try Capture.load(path: path)
        #expect(capture.flows.map { String(decoding: $0.request.bytes, as: UTF8.self) } == ["hello", "hello"])
        #expect(capture.flows.allSatisfy { String(decoding: $0.response.bytes, as: UTF8.self) == "hello" })
    }

    /// Holding packets back for order is bounded: 8 MiB recorded at one instant are mostly in
    /// the file at once, not held until the flush, and come out whole.
    @Test func packetsHeldForOrderAreBoundedInBytes() async throws {
        let path = temporaryPath("bounded.pcap")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let recorder = try PcapRecorder(path: path)
        let client = try SocketAddress(ipAddress: "127.0.0.1", port: 50_000)
        let relay = try SocketAddress(ipAddress: "127.0.0.1", port: 8080)
        let payload = (0..<(8 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        var buffer = ByteBufferAllocator().buffer(capacity: payload.count)
        buffer.writeBytes(payload)
        recorder.legOpened(ConnectionID(1), leg: .client, local: relay, remote: client, at: 1_000)
        recorder.sent(ConnectionID(1), leg: .client, buffer, at: 2_000)
        let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        #expect(size >= 3 << 20, "written before the flush: \(size) bytes")
        recorder.close()
        #expect(try Capture.load(path: path).flows.first?.response.bytes == payload)
    }

    /// A recorder left open shows its packets in the file within a second or so: `netsim relay
    /// --pcap` showed 0 bytes for as long as libpcap's buffer lasted, and a `kill -9` lost it all.
    @Test func packetsReachTheFileWhileTheRecorderIsStillOpen() async throws {
        let path = temporaryPath("live.pcap")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let recorder = try PcapRecorder(path: path)
        defer { recorder.close() }
        let client = try SocketAddress(ipAddress: "127.0.0.1", port: 50_000)
        let relay = try SocketAddress(ipAddress: "127.0.0.1", port: 8080)
        var buffer = ByteBufferAllocator().buffer(capacity: 5)
        buffer.writeString("hello")
        recorder.legOpened(ConnectionID(1), leg: .client, local: relay, remote: client, at: 1_000)
        recorder.received(ConnectionID(1), leg: .client, buffer, at: 2_000)
        // Polled: nothing outside the file says when it was flushed. Bounded at 10 s.
        let deadline = ContinuousClock.now + .seconds(10)
        var capture: Capture?
        while capture?.flows.first?.request.bytes != [UInt8](text: "hello"), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            capture = try? Capture.load(path: path)
        }
        #expect(capture?.flows.first?.request.bytes == [UInt8](text: "hello"), "the file holds \((try? FileManager.default.attributesOfItem(atPath: path)[.size]) ?? "nothing") bytes")
    }

    /// A recording holds the pcap file header from the start, as tcpdump's does: with no packet
    /// yet, the file was 0 bytes, and `netsim profile` said it was empty, not a pcap (QA 52).
    @Test func aRecordingWithNoPacketYetIsAPcapAlready() throws {
        let path = temporaryPath("no-packets.pcap")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let recorder = try PcapRecorder(path: path)
        defer { recorder.close() }
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(bytes.count == 24 && bytes.prefix(4) == [0x4D, 0x3C, 0xB2, 0xA1], "\(bytes)")  // nanosecond pcap, little-endian
    }
}
