import NetsimCore
import NetsimFaults
import NetsimPacket
import NetsimPcap
import Testing

/// The packet faults' decisions, packet by packet, without namespaces (the real ones are in
/// PacketFaultTests).
@Suite struct PacketFaultStateTests {
    let plan = PacketAddressPlan(slot: 5)
    var client: PacketEndpoint { PacketEndpoint(address: bytes(plan.client), port: 40000) }
    var host: PacketEndpoint { PacketEndpoint(address: bytes(plan.host), port: 8080) }

    func bytes(_ address: IPv4Address) -> [UInt8] { withUnsafeBytes(of: address.value.bigEndian) { Array($0) } }

    func judge(_ state: inout PacketFaultState, _ packet: [UInt8], _ direction: Direction) -> PacketFaultVerdict {
        let header = packet.withUnsafeBytes { IPHeader($0) }!
        return state.judge(packet, header: header, direction: direction)
    }

    /// An IPv4 UDP datagram of 8 payload bytes (checksums do not matter to the judge).
    func udp(from source: IPv4Address, _ sourcePort: UInt16, to destination: IPv4Address, _ destinationPort: UInt16) -> [UInt8] {
        var packet: [UInt8] = [0x45, 0, 0, 36, 0, 0, 0x40, 0, 64, 17, 0, 0] + bytes(source) + bytes(destination)
        packet += [UInt8(sourcePort >> 8), UInt8(sourcePort & 0xFF), UInt8(destinationPort >> 8), UInt8(destinationPort & 0xFF), 0, 16, 0, 0]
        return packet + [UInt8](repeating: 7, count: 8)
    }

    @Test func offlineAndBlackholeDropEverythingUntilTheirLastInstanceEnds() {
        var state = PacketFaultState(plan: plan)
        let ack = TCPSegment.bare(from: client, to: host, seq: 1, ack: 1, flags: [.ack])
        #expect(judge(&state, ack, .up) == .pass)
        state.begin(.offline)
        state.begin(.offline)
        #expect(judge(&state, ack, .up) == .drop("offline"))
        state.end(.offline)
        #expect(judge(&state, ack, .up) == .drop("offline"), "one offline still in force")
        state.end(.offline)
        state.begin(.blackhole)
        #expect(judge(&state, TCPSegment.bare(from: host, to: client, seq: 1, ack: 1, flags: [.ack]), .down) == .drop("blackhole"))
        state.end(.blackhole)
        #expect(state.isQuiet && judge(&state, ack, .up) == .pass)
    }

    @Test func udpBlockDropsDatagramsOnlyToOrFromItsPortAndNeverTCP() {
        var state = PacketFaultState(plan: plan)
        state.begin(.udpBlock(port: 443))
        #expect(judge(&state, udp(from: plan.client, 5000, to: plan.host, 443), .up) == .drop("udp-block"))
        #expect(judge(&state, udp(from: plan.host, 443, to: plan.client, 5000), .down) == .drop("udp-block"))
        #expect(judge(&state, udp(from: plan.client, 5000, to: plan.host, 53), .up) == .pass)
        #expect(judge(&state, TCPSegment.bare(from: client, to: PacketEndpoint(address: host.address, port: 443), seq: 1, ack: 0, flags: [.syn]), .up) == .pass)
        state.begin(.udpBlock(port: nil))
        #expect(judge(&state, udp(from: plan.client, 5000, to: plan.host, 53), .up) == .drop("udp-block"))
    }

    @Test func staleAnswersAnOldConnectionsNextSegmentWithRSTsWhoseNumbersTheKernelsAccept() throws {
        var state = PacketFaultState(plan: plan)
        state.begin(.stale)
        // The host's data for a connection nobody has touched since passes: only the client's
        // next segment finds the host side has forgotten it.
        #expect(judge(&state, TCPSegment.bare(from: host, to: client, seq: 900, ack: 100, flags: [.ack]), .down) == .pass)
        let next = TCPSegment.bare(from: client, to: host, seq: 1000, ack: 5000, flags: [.ack, .psh])
        guard case .reset(let name, let toClient, let toHost, _) = judge(&state, next, .up) else {
            Issue.record("no reset")
            return
        }
        #expect(name == "stale")
        let answer = try #require(TCPSegment(ipPacket: toClient))
        #expect(answer.source == host && answer.destination == client)
        #expect(answer.flags == [.rst] && answer.seq == 5000, "RFC 9293: the RST's sequence number is the segment's ACK")
        let told = try #require(TCPSegment(ipPacket: toHost))
        #expect(told.source == client && told.destination == host && told.flags == [.rst] && told.seq == 1000)
        // The forgotten connection's later packets from the host vanish.
        #expect(judge(&state, TCPSegment.bare(from: host, to: client, seq: 900, ack: 1000, flags: [.ack]), .down) == .drop("stale"))

        // Without ACK: sequence 0, acknowledging everything the segment occupied (FIN counts one).
        let other = PacketEndpoint(address: client.address, port: 40001)
        guard case .reset(_, let toClient2, _, _) = judge(&state, TCPSegment.bare(from: other, to: host, seq: 77, ack: 0, flags: [.fin]), .up) else {
            Issue.record("no reset without ACK")
            return
        }
        let answer2 = try #require(TCPSegment(ipPacket: toClient2))
        #expect(answer2.flags == [.rst, .ack] && answer2.seq == 0 && answer2.ack == 78)
    }

    @Test func staleLeavesConnectionsOpenedAfterItStarted() {
        var state = PacketFaultState(plan: plan)
        state.begin(.stale)
        let fresh = PacketEndpoint(address: client.address, port: 41000)
        #expect(judge(&state, TCPSegment.bare(from: fresh, to: host, seq: 10, ack: 0, flags: [.syn]), .up) == .pass)
        #expect(judge(&state, TCPSegment.bare(from: fresh, to: host, seq: 11, ack: 1, flags: [.ack]), .up) == .pass)
    }

    @Test func afterAHandoverPacketsOfTheOldAddressAreTheHandoversAndTheNextMovesBack() {
        var state = PacketFaultState(plan: plan)
        #expect(state.clientAddresses.v4 == plan.client)
        state.begin(.handover)
        #expect(state.clientAddresses.v4 == plan.alternateClient)
        #expect(PacketAddressPlan.contains(plan.alternateClient) && plan.alternateClient.value == plan.host.value + 2)
        let toOld = udp(from: plan.host, 53, to: plan.client, 5000)
        #expect(state.judgeRefused(toOld.withUnsafeBytes { IPHeader($0)! }, direction: .down) == .drop("handover"))
        let elsewhere = udp(from: plan.alternateClient, 5000, to: IPv4Address(192, 0, 2, 1), 53)
        #expect(state.judgeRefused(elsewhere.withUnsafeBytes { IPHeader($0)! }, direction: .up) == nil)
        state.begin(.handover)
        #expect(state.clientAddresses.v4 == plan.client && state.clientAddresses.v6 == plan.client6)
    }

    @Test func faultsWithoutAPacketFormAndTimingsThatMeanNothingAreRefused() throws {
        #expect(throws: PacketFaultError.self) { try PacketFault(.refuse) }
        #expect(throws: PacketFaultError.self) { try PacketFault(.stale(.fin)) }
        #expect(try PacketFault(.stale(.rst)) == .stale)
        #expect(try PacketFault(.udpBlock(port: 443)) == .udpBlock(port: 443))
        #expect(throws: PacketFaultError.self) { try ScheduledPacketFault(TimedFault(parsing: "handover@1s+2s")) }
        let offline = try ScheduledPacketFault(TimedFault(parsing: "offline@1.5s+2s"))
        #expect(offline.start == 1_500_000_000 && offline.end == 3_500_000_000 && offline.description == "offline at 1.5s for 2s")
    }
}
