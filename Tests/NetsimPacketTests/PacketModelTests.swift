import NetsimCore
import NetsimLink
import NetsimPacket
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct PacketModelTests {
    @Test func queueLimitParsesPacketsAndBytes() throws {
        #expect(try QueueLimit(parsing: "100p") == .packets(100))
        #expect(try QueueLimit(parsing: "25packets") == .packets(25))
        #expect(try QueueLimit(parsing: "64KB") == .bytes(64_000))
        #expect(try QueueLimit(parsing: "1MiB") == .bytes(1_048_576))
        #expect(throws: UnitParseError.self) { try QueueLimit(parsing: "0p") }
        #expect(throws: UnitParseError.self) { try QueueLimit(parsing: "lots") }
        // Smaller than one full-size packet, it would drop every one (QA 38: `--queue 10`).
        #expect(try QueueLimit(parsing: "1500") == .bytes(1500))
        #expect { try QueueLimit(parsing: "10") } throws: {
            "\($0)" == "'10' is not a queue that holds a full-size packet (1500 bytes); write it as 1500 bytes or more (64KB, 150000), or a packet count (10p)"
        }
        // The packet count suggested is one that parses (QA 42: '1KB' suggested '1KBp').
        #expect { try QueueLimit(parsing: "1KB") } throws: { "\($0)".hasSuffix("or a packet count (10p)") }
        #expect(QueueLimit.standard == .packets(1000))
    }

    @Test func addressPlanTakesA30OfTheBenchmarkingRangeAndAvoidsSlotsInUse() {
        let plan = PacketAddressPlan(slot: 0)
        #expect(plan.host.description == "198.18.0.1")
        #expect(plan.client.description == "198.18.0.2")
        #expect(PacketAddressPlan(slot: PacketAddressPlan.slotCount - 1).client.description == "198.19.255.254")
        #expect(plan.host6.description == "2001:2::1")
        #expect(PacketAddressPlan(slot: 0x1234).client6.description == "2001:2:0:1234::2")
        #expect(PacketAddressPlan.contains(IPv4Address(198, 19, 3, 4)))
        #expect(!PacketAddressPlan.contains(IPv4Address(198, 20, 0, 1)))
        let taken: Set = [PacketAddressPlan(slot: 5).host, PacketAddressPlan(slot: 6).host, IPv4Address(127, 0, 0, 1)]
        #expect(PacketAddressPlan.free(preferred: 5, inUse: taken)?.slot == 7)
        #expect(PacketAddressPlan.free(preferred: PacketAddressPlan.slotCount - 1, inUse: []).map(\.slot) == PacketAddressPlan.slotCount - 1)
    }

    static func ipv4(from source: IPv4Address, to destination: IPv4Address) -> [UInt8] {
        var packet = [UInt8](repeating: 0, count: 40)
        packet[0] = 0x45
        packet[9] = 6
        for (offset, address) in [(12, source), (16, destination)] {
            for i in 0..<4 { packet[offset + i] = UInt8(address.value >> (24 - 8 * i) & 0xFF) }
        }
        return packet
    }

    @Test func filterPassesOnlyTrafficBetweenTheNamespaceAndTheHostSide() {
        let plan = PacketAddressPlan(slot: 9)
        let filter = PacketFilter(plan: plan)
        func check(_ packet: [UInt8], _ direction: Direction) -> FilterRejection? {
            packet.withUnsafeBytes { bytes in
                if case .failure(let reason) = filter.check(bytes, direction: direction) { return reason }
                return nil
            }
        }
        #expect(check(Self.ipv4(from: plan.client, to: plan.host), .up) == nil)
        #expect(check(Self.ipv4(from: plan.host, to: plan.client), .down) == nil)
        #expect(check(Self.ipv4(from: plan.client, to: IPv4Address(192, 0, 2, 1)), .up) == .notForHost)
        #expect(check(Self.ipv4(from: plan.client, to: IPv4Address(127, 0, 0, 1)), .up) == .notForHost)
        #expect(check(Self.ipv4(from: IPv4Address(10, 0, 0, 1), to: plan.client), .down) == .notFromHost)
        func ipv6(from source: IPv6Address, to destination: IPv6Address) -> [UInt8] {
            var packet = [UInt8](repeating: 0, count: 60)
            packet[0] = 0x60
            packet.replaceSubrange(8..<24, with: source.bytes)
            packet.replaceSubrange(24..<40, with: destination.bytes)
            return packet
        }
        #expect(check(ipv6(from: plan.client6, to: plan.host6), .up) == nil)
        #expect(check(ipv6(from: plan.host6, to: plan.client6), .down) == nil)
        #expect(check(ipv6(from: plan.client6, to: IPv6Address(groups: [0xFF02, 0, 0, 0, 0, 0, 0, 0x16])), .up) == .notForHost)
        #expect(check(ipv6(from: plan.client6, to: PacketAddressPlan(slot: 10).host6), .up) == .notForHost)
        #expect(check([0x60, 0, 0], .up) == .notIP)
        #expect(check([0x45, 0, 0], .up) == .notIP)
        #expect(check([0x12, 0, 0, 0], .up) == .notIP)
        let header = ipv6(from: plan.client6, to: plan.host6).withUnsafeBytes { IPHeader($0) }
        #expect(header?.headerLength == 40)
        #expect(IPv4Header(Self.ipv4(from: plan.client, to: plan.host))?.headerLength == 20)
    }

    @Test func namespaceNamesCarryTheOwnerAndRoundTrip() {
        let name = NamespaceName(pid: 4_194_303, startTime: 123_456, index: 99)
        #expect(name.description == "netsim-4194303-123456-99")
        #expect(NamespaceName(parsing: name.description) == name)
        #expect(NamespaceName(parsing: "netsim-12") == nil)
        #expect(NamespaceName(parsing: "blue") == nil)
        #expect(name.hostDevice.utf8.count <= 15 && name.clientDevice.utf8.count <= 15)
        #expect(name.hostDevice != name.clientDevice)
    }

    @Test func aDeadOwnerIsNotAlive() {
        // pid 1 runs, but not since tick 1 after boot with this start time…
        let wrongStart = NamespaceName(pid: 1, startTime: UInt64.max, index: 0)
        #expect(!wrongStart.ownerIsAlive)
        let me = getpid()
        if let start = NamespaceName.startTime(of: me) {
            #expect(NamespaceName(pid: me, startTime: start, index: 0).ownerIsAlive)
        }
    }

    @Test func releaseScheduleIsEarliestFirstAndStableForTies() {
        var schedule = ReleaseSchedule<String>()
        schedule.schedule("b", at: 20)
        schedule.schedule("a", at: 10)
        schedule.schedule("c", at: 20)
        #expect(schedule.nextTime == 10)
        #expect(schedule.popDue(now: 5) == nil)
        #expect(schedule.popDue(now: 25) == "a")
        #expect(schedule.popDue(now: 25) == "b")
        #expect(schedule.popDue(now: 25) == "c")
        #expect(schedule.nextTime == nil)
    }

    @Test func linkProblemsNameWhatAPacketPathCannotDo() {
        var sliced = PacketLinkConfiguration()
        sliced.up.base.sliceSize = 100
        #expect(sliced.problem == .slicing)
        var reorderOnly = PacketLinkConfiguration()
        reorderOnly.down.reorder = .percent(5)
        #expect(reorderOnly.problem == .reorderWithoutDelay(.down))
        reorderOnly.down.base.latency = .milliseconds(10)
        #expect(reorderOnly.problem == nil)
    }
}
