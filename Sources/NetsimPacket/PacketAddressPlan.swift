/// The addresses of one shell's point-to-point link, from 198.18.0.0/15.
///
/// 198.18.0.0/15 is reserved by RFC 2544 (and IANA's special-purpose registry, RFC 6890) for
/// benchmarking network devices: it is never routed on the Internet, so a host side address can
/// neither shadow a real destination nor leak, and it is large (32 768 /30 links) so shells that
/// run at the same time each get their own. RFC 5737's TEST-NET blocks are for documentation and
/// hold only 192 such links between them. Each shell takes one /30: `.1` is the host side
/// (NETSIM_HOST), `.2` the namespace's address, `.3` the address a `handover` fault moves it to
/// (and the next handover back to `.2`). The host side routes `.2/31` into its device, so both
/// stay inside the shell's own /30, inside the reserved range, and on the packet path.
///
/// IPv6 the same way from 2001:2::/48, which RFC 5180 reserves for IPv6 benchmarking (RFC 3849's
/// 2001:db8::/32 is for documentation): slot N is 2001:2:0:N::1 (NETSIM_HOST6), ::2, and ::3
/// after a handover (the host side routes ::2/127).
public struct PacketAddressPlan: Equatable, Sendable {
    public static let network = IPv4Address(198, 18, 0, 0)
    public static let prefixLength = 15
    public static let slotCount = 1 << (32 - prefixLength - 2)

    /// Which /30 of the range.
    public let slot: Int

    public init(slot: Int) {
        precondition((0..<Self.slotCount).contains(slot), "slot out of range: \(slot)")
        self.slot = slot
    }

    /// The host side's address: what NETSIM_HOST names and servers listen on.
    public var host: IPv4Address { IPv4Address(Self.network.value + UInt32(slot) * 4 + 1) }
    /// The namespace's own address: the source of every packet CMD sends.
    public var client: IPv4Address { IPv4Address(Self.network.value + UInt32(slot) * 4 + 2) }

    /// The namespace's address after an odd number of handovers: the /30's last address.
    public var alternateClient: IPv4Address { IPv4Address(client.value + 1) }

    /// The namespace's addresses after `handovers` handovers: they alternate between `.2` and `.3`.
    public func clientAddresses(afterHandovers handovers: Int) -> (v4: IPv4Address, v6: IPv6Address) {
        handovers % 2 == 0 ? (client, client6) : (alternateClient, alternateClient6)
    }

    /// The host side's IPv6 address, 2001:2:0:<slot>::1.
    public var host6: IPv6Address { IPv6Address(groups: [0x2001, 2, 0, UInt16(slot), 0, 0, 0, 1]) }
    /// The namespace's IPv6 address, 2001:2:0:<slot>::2.
    public var client6: IPv6Address { IPv6Address(groups: [0x2001, 2, 0, UInt16(slot), 0, 0, 0, 2]) }
    /// The namespace's IPv6 address after an odd number of handovers, 2001:2:0:<slot>::3.
    public var alternateClient6: IPv6Address { IPv6Address(groups: [0x2001, 2, 0, UInt16(slot), 0, 0, 0, 3]) }

    /// True for any address in 198.18.0.0/15.
    public static func contains(_ address: IPv4Address) -> Bool {
        address.value >> (32 - prefixLength) == network.value >> (32 - prefixLength)
    }

    /// The first slot, starting at `preferred` and wrapping, whose addresses none of `inUse` is
    /// (the host's own addresses: another shell's host side); nil when all are taken.
    public static func free(preferred: Int, inUse: Set<IPv4Address>) -> PacketAddressPlan? {
        let taken = Set(inUse.filter(contains).map { Int(($0.value - network.value) / 4) })
        for step in 0..<slotCount {
            let slot = (preferred + step) % slotCount
            if !taken.contains(slot) { return PacketAddressPlan(slot: slot) }
        }
        return nil
    }
}
