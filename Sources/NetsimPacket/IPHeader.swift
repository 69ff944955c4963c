/// What the filter and the link need from an IP packet as it came off a TUN device: its
/// version, its two addresses, and where its payload starts (corruption lands past the header).
public enum IPHeader: Equatable, Sendable {
    case v4(IPv4Header)
    /// IPv6's fixed header is 40 bytes; extension headers count as payload here.
    case v6(source: IPv6Address, destination: IPv6Address)

    /// nil for anything that is neither a well-formed IPv4 header nor a 40-byte IPv6 one.
    public init?(_ packet: UnsafeRawBufferPointer) {
        guard let first = packet.first else { return nil }
        switch first >> 4 {
        case 4:
            guard let header = IPv4Header(packet) else { return nil }
            self = .v4(header)
        case 6:
            guard packet.count >= 40 else { return nil }
            self = .v6(source: IPv6Address(Array(packet[8..<24])), destination: IPv6Address(Array(packet[24..<40])))
        default:
            return nil
        }
    }

    public var headerLength: Int {
        switch self {
        case .v4(let header): return header.headerLength
        case .v6: return 40
        }
    }
}
