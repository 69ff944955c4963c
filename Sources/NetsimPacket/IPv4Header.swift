/// The few fields of an IPv4 header the packet path looks at, read from a packet as it came off
/// a TUN device (no link header: the devices are opened with IFF_NO_PI).
public struct IPv4Header: Equatable, Sendable {
    public var source: IPv4Address
    public var destination: IPv4Address
    /// IANA protocol number: 6 TCP, 17 UDP, 1 ICMP.
    public var protocolNumber: UInt8
    /// IHL × 4.
    public var headerLength: Int

    /// nil for anything that is not a well-formed IPv4 header (IPv6, truncated, bad IHL).
    public init?(_ packet: UnsafeRawBufferPointer) {
        guard packet.count >= 20, packet[0] >> 4 == 4 else { return nil }
        let length = Int(packet[0] & 0x0F) * 4
        guard length >= 20, packet.count >= length else { return nil }
        func address(at offset: Int) -> IPv4Address {
            IPv4Address(packet[offset], packet[offset + 1], packet[offset + 2], packet[offset + 3])
        }
        source = address(at: 12)
        destination = address(at: 16)
        protocolNumber = packet[9]
        headerLength = length
    }

    public init?(_ packet: [UInt8]) {
        guard let header = packet.withUnsafeBytes({ IPv4Header($0) }) else { return nil }
        self = header
    }
}
