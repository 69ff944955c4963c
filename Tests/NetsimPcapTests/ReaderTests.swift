import CPcap
import Foundation
import NetsimCore
import Testing
@testable import NetsimPcap

/// Reading captures: every link type, IPv4 and IPv6, pcapng, and reassembly of what real
/// captures contain.
@Suite("pcap reading and TCP reassembly")
struct ReaderTests {
    /// A short conversation, as IP packets: handshake, a request, an answer in two segments, FINs.
    static func conversation(client: PacketEndpoint = clientEnd, server: PacketEndpoint = serverEnd) -> [[UInt8]] {
        var tcp = SyntheticConnection(initiator: client, responder: server, initialSequence: 1000)
        var packets = tcp.handshake()
        packets += Array("GET /a HTTP/1.1\r\nHost: x\r\n\r\n".utf8).withUnsafeBytes { tcp.data(from: .initiator, $0) }
        packets += Array("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".utf8).withUnsafeBytes { tcp.data(from: .responder, $0) }
        packets += tcp.fin(from: .initiator) + tcp.fin(from: .responder)
        return packets
    }

    /// Writes `packets` under a link header with the given DLT.
    static func write(_ packets: [[UInt8]], dlt: Int32, header: ([UInt8]) -> [UInt8]) throws -> String {
        let path = temporaryPath("link-\(dlt).pcap")
        let writer = try PcapFileWriter(path: path, linkType: dlt)
        for (i, packet) in packets.enumerated() { writer.write(header(packet) + packet, nanoseconds: 1_000_000_000 + Int64(i) * 1000) }
        writer.close()
        return path
    }

    static func etherType(_ packet: [UInt8]) -> [UInt8] { packet[0] >> 4 == 6 ? [0x86, 0xdd] : [0x08, 0x00] }

    @Test(arguments: ["ipv4", "ipv6"])
    func everyLinkTypeDecodesToTheSameConversation(family: String) throws {
        let v6 = family == "ipv6"
        let client = v6 ? PacketEndpoint(address: IPAddressText.parse("2001:db8::1")!, port: 40_000) : clientEnd
        let server = v6 ? PacketEndpoint(address: IPAddressText.parse("2001:db8::2")!, port: 80) : serverEnd
        let packets = Self.conversation(client: client, server: server)
        let links: [(String, Int32, ([UInt8]) -> [UInt8])] = [
            ("ethernet", DLT_EN10MB, { [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] + Self.etherType($0) }),
            ("ethernet+vlan", DLT_EN10MB, { [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x81, 0x00, 0, 7] + Self.etherType($0) }),
            ("sll", DLT_LINUX_SLL, { [0, 0, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0] + Self.etherType($0) }),
            ("sll2", DLT_LINUX_SLL2, { Self.etherType($0) + [0, 0, 0, 0, 0, 2, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0] }),
            ("raw", DLT_RAW, { _ in [] }),
            ("null", DLT_NULL, { $0[0] >> 4 == 6 ? [10, 0, 0, 0] : [2, 0, 0, 0] }),  // little-endian AF
            ("null big-endian", DLT_NULL, { $0[0] >> 4 == 6 ? [0, 0, 0, 30] : [0, 0, 0, 2] }),
            ("loop", DLT_LOOP, { $0[0] >> 4 == 6 ? [0, 0, 0, 24] : [0, 0, 0, 2] }),
        ]
        for (name, dlt, header) in links {
            let path = try Self.write(packets, dlt: dlt, header: header)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let capture = try Capture.load(path: path)
            #expect(capture.flows.count == 1, "\(name)")
            guard let flow = capture.flows.first else { continue }
            #expect(flow.client == client && flow.server == server, "\(name)")
            #expect(String(decoding: flow.request.bytes, as: UTF8.self) == "GET /a HTTP/1.1\r\nHost: x\r\n\r\n", "\(name)")
            #expect(String(decoding: flow.response.bytes, as: UTF8.self).hasSuffix("hello"), "\(name)")
            #expect(FlowProfile(flow).close.description == "client FIN first, then server FIN", "\(name)")
        }
    }

    @Test func pcapngReadsTheSameAsPcap() async throws {
        let ng = temporaryPath("fixture.pcapng")
        defer { try? FileManager.default.removeItem(atPath: ng) }
        _ = try await Tshark.run(["-r", fixture("zeek-http-pipelined-requests.pcap"), "-F", "pcapng", "-w", ng])
        let original = try Capture.load(path: fixture("zeek-http-pipelined-requests.pcap"))
        let converted = try Capture.load(path: ng)
        #expect(converted.packetCount == original.packetCount)
        #expect(converted.flows.count == 1)
        #expect(converted.flows.first?.response.bytes == original.flows.first?.response.bytes)
        #expect(converted.flows.first?.packets.map(\.time) == original.flows.first?.packets.map(\.time))
    }

    @Test func reassemblySurvivesRetransmissionsOverlapsReorderingAndWrapAround() throws {
        let builder = try CaptureBuilder(path: temporaryPath("messy.pcap"))
        defer { try? FileManager.default.removeItem(atPath: builder.path) }
        let text = Array("0123456789abcdefghijklmnopqrstuvwxyz".utf8)
        // The ISN sits just below 2³² so the stream wraps.
        let isn: UInt32 = 0xFFFF_FFF0
        let s = { (offset: Int) in isn &+ 1 &+ UInt32(offset) }
        func data(_ range: Range<Int>) -> [UInt8] { segment(clientEnd, serverEnd, seq: s(range.lowerBound), Array(text[range])) }
        builder.write([segment(clientEnd, serverEnd, seq: isn, flags: .syn)])
        builder.write([segment(serverEnd, clientEnd, seq: 5000, ack: s(0), flags: [.syn, .ack])])
        for piece in [data(0..<10), data(20..<30), data(10..<20), data(5..<15), data(0..<10), data(25..<36), data(30..<36)] {
            builder.advance(1_000_000)
            builder.write([piece])
        }
        builder.close()
        let flow = try #require(try Capture.load(path: builder.path).flows.first)
        #expect(flow.request.bytes == text)
        #expect(flow.request.isComplete)
        #expect(flow.request.time(at: 20)! < flow.request.time(at: 10)!, "bytes 20… arrived before bytes 10…")
        let analysis = SequenceAnalysis(flow)
        #expect(analysis.count(.retransmission, in: flow) + analysis.count(.outOfOrder, in: flow) >= 3)
    }

    @Test func aCaptureStartingMidFlowStartsTheStreamAtTheFirstByteSeen() throws {
        let builder = try CaptureBuilder(path: temporaryPath("midflow.pcap"))
        defer { try? FileManager.default.removeItem(atPath: builder.path) }
        // No handshake; an out-of-order segment comes first; the server has port 80.
        builder.write([segment(serverEnd, clientEnd, seq: 7010, ack: 1, Array("ld".utf8))])
        builder.advance(1000)
        builder.write([segment(serverEnd, clientEnd, seq: 7000, ack: 1, Array("hello, wor".utf8))])
        builder.close()
        let capture = try Capture.load(path: builder.path)
        let flow = try #require(capture.flows.first)
        #expect(flow.client == clientEnd && !flow.clientFromHandshake, "port 80 marks the server")
        #expect(String(decoding: flow.response.bytes, as: UTF8.self) == "hello, world")
    }

    @Test func aShortSnaplenIsReportedAndTheMissingBytesZeroFilled() throws {
        let builder = try CaptureBuilder(path: temporaryPath("snaplen.pcap"))
        defer { try? FileManager.default.removeItem(atPath: builder.path) }
        let body = [UInt8](repeating: 0x41, count: 100)
        builder.write([segment(clientEnd, serverEnd, seq: 1, flags: .syn)])
        builder.write([segment(clientEnd, serverEnd, seq: 2, body)], captureLength: 40 + 60)
        builder.write([segment(clientEnd, serverEnd, seq: 102, body)])
        builder.write([segment(clientEnd, serverEnd, seq: 202, body)], captureLength: 30)  // headers cut
        builder.write([segment(clientEnd, serverEnd, seq: 302, body)])
        builder.close()
        let capture = try Capture.load(path: builder.path)
        #expect(capture.truncatedSegments == 1)
        #expect(capture.skipped["headers cut by the snaplen"] == 1)
        // The snaplen in force, not the file header's (262,144 here; editcap -s leaves it unset).
        #expect(capture.notes.contains("1 TCP segment was cut short by the capture's snaplen (100 bytes); their 40 missing payload bytes are zero-filled"), "\(capture.notes)")
        // The cut bytes are counted once, as cut (QA 42: also as "never captured"); the skipped
        // segment's are not in the file at all.
        #expect(capture.notes.contains("flow 1 client → server: 100 bytes were never captured"), "\(capture.notes)")
        let flow = try #require(capture.flows.first)
        #expect(flow.request.bytes.count == 400)
        #expect(flow.request.missing == [60..<100, 200..<300] && flow.request.cutBySnaplen == 40)
        #expect(Array(flow.request.bytes[100..<200]) == body)
    }

    /// Bytes the snaplen kept out of the file still crossed the wire: the profile counted only
    /// the captured ones, so its rates were those of the file, not of the path. And the average
    /// counted the first segment, which "while sending" leaves out (n segments' times span
    /// n − 1 gaps): without an idle gap it read higher than "while sending" (twice, for two).
    @Test func theProfileCountsCutBytesAndItsRatesAgree() throws {
        let builder = try CaptureBuilder(path: temporaryPath("profile-cut.pcap"))
        defer { try? FileManager.default.removeItem(atPath: builder.path) }
        let body = [UInt8](repeating: 0x41, count: 1000)
        builder.write([segment(clientEnd, serverEnd, seq: 1, flags: .syn)])
        for index in 0..<5 {
            builder.advance(1_000_000)
            builder.write([segment(clientEnd, serverEnd, seq: 2 + UInt32(index) * 1000, body)], captureLength: index == 2 ? 96 : nil)
        }
        builder.close()
        let profile = try #require(try Capture.load(path: builder.path).flows.map(FlowProfile.init).first)
        #expect(profile.toServer.bytes == 5000)
        // 4000 bytes after the first segment in 4 ms: 8 Mbit/s, both ways of counting.
        #expect(profile.toServer.averageThroughput == 8_000_000)
        #expect(profile.toServer.burstThroughput == 8_000_000)
    }

    /// A segment the capture never had crossed the wire in its burst: the average counted its
    /// bytes and "while sending" did not, so the average read higher (527 against 313 Mbit/s,
    /// QA 54); one missing before the first captured segment is before the time measured. And
    /// one gap is "1 gap".
    @Test(arguments: [0, 2])
    func theRatesAgreeAcrossASegmentTheCaptureNeverHad(skipped: Int) throws {
        let builder = try CaptureBuilder(path: temporaryPath("profile-gap.pcap"))
        defer { try? FileManager.default.removeItem(atPath: builder.path) }
        let body = [UInt8](repeating: 0x41, count: 1000)
        builder.write([segment(clientEnd, serverEnd, seq: 1, flags: .syn)])
        for index in 0..<5 {
            builder.advance(1_000_000)
            if index != skipped { builder.write([segment(clientEnd, serverEnd, seq: 2 + UInt32(index) * 1000, body)]) }
        }
        builder.close()
        let profile = try #require(try Capture.load(path: builder.path).flows.map(FlowProfile.init).first)
        #expect(profile.toServer.notCaptured == 1)
        // 1000 bytes a millisecond, however the gap falls.
        #expect(profile.toServer.averageThroughput == 8_000_000)
        #expect(profile.toServer.burstThroughput == 8_000_000)
        #expect(ProfileReport.direction(profile.toServer).hasSuffix(", 1 gap not captured"), "\(ProfileReport.direction(profile.toServer))")
    }

    /// Two orders Wireshark's rules care about, on segments written by hand: data the receiver
    /// has acknowledged, arriving again soon after, is a spurious retransmission (netsim called
    /// it out of order); and a segment stamped before the highest one (timestamps that go back)
    /// is a retransmission, not out of order (netsim took the negative gap as "soon").
    @Test("the analysis follows tshark on a late acknowledged segment and on time going back", arguments: [false, true])
    func lateAndBackwards(backwards: Bool) async throws {
        let builder = try CaptureBuilder(path: temporaryPath("late-\(backwards).pcap"))
        defer { try? FileManager.default.removeItem(atPath: builder.path) }
        let body = [UInt8](repeating: 0x41, count: 100)
        builder.write([segment(clientEnd, serverEnd, seq: 0, flags: .syn)])
        builder.advance(1_000_000)
        builder.write([segment(serverEnd, clientEnd, seq: 0, ack: 1, flags: [.syn, .ack])])
        builder.advance(1_000_000)
        builder.write([segment(clientEnd, serverEnd, seq: 1, ack: 1, flags: .ack)])
        builder.advance(10_000_000)
        builder.write([segment(serverEnd, clientEnd, seq: 1, ack: 1, body)])
        builder.advance(100_000)
        builder.write([segment(serverEnd, clientEnd, seq: 101, ack: 1, body)])
        if backwards {
            builder.advance(-50_000)  // stamped between the two
            builder.write([segment(serverEnd, clientEnd, seq: 1, ack: 1, body)])
        } else {
            builder.advance(100_000)
            builder.write([segment(clientEnd, serverEnd, seq: 1, ack: 201, flags: .ack)])
            builder.advance(100_000)  // well within the 2 ms handshake round trip
            builder.write([segment(serverEnd, clientEnd, seq: 1, ack: 1, body)])
        }
        builder.close()
        let capture = try Capture.load(path: builder.path)
        let flow = try #require(capture.flows.first)
        for (flag, field) in [(PacketFlags.retransmission, "tcp.analysis.retransmission"), (.spuriousRetransmission, "tcp.analysis.spurious_retransmission"),
                              (.outOfOrder, "tcp.analysis.out_of_order")] {
            let theirs = try await Tshark.fields(builder.path, filter: field, ["frame.number"]).count
            #expect(SequenceAnalysis(flow).count(flag, in: flow) == theirs, "\(field)")
        }
        #expect(SequenceAnalysis(flow).count(.outOfOrder, in: flow) == 0)
    }

    @Test func theAnalysisMatchesTsharkOnRetransmissionsOutOfOrderAndDuplicateAcks() async throws {
        let path = fixture("zeek-http-206_example_c.pcap")
        let capture = try Capture.load(path: path)
        for (flag, field) in [(PacketFlags.retransmission, "tcp.analysis.retransmission"), (.fastRetransmission, "tcp.analysis.fast_retransmission"),
                              (.outOfOrder, "tcp.analysis.out_of_order"), (.duplicateAck, "tcp.analysis.duplicate_ack"),
                              (.spuriousRetransmission, "tcp.analysis.spurious_retransmission"), (.previousNotCaptured, "tcp.analysis.lost_segment")] {
            let tshark = try await Tshark.fields(path, filter: field, ["tcp.stream"])
            for (stream, flow) in capture.flows.enumerated() {
                let theirs = tshark.filter { $0.first == "\(stream)" }.count
                #expect(SequenceAnalysis(flow).count(flag, in: flow) == theirs, "\(field) in stream \(stream)")
            }
        }
    }
}
