import CPcap

/// The link types netsim reads, and where the IP packet starts in each.
///
/// libpcap hands over the link header untouched; this strips it. Anything but IPv4 and IPv6
/// (ARP, LLDP, …) is skipped without complaint. Ethernet frames may carry VLAN tags, PPPoE
/// sessions or MPLS labels before the IP header (pcpp-one_http_stream_rst.pcap has two VLAN tags
/// and PPPoE).
enum LinkLayer {
    case ethernet, linuxCooked, linuxCooked2, rawIP, null, loop

    /// nil for a link type netsim does not decode.
    init?(dlt: Int32) {
        switch dlt {
        case DLT_EN10MB: self = .ethernet
        case DLT_LINUX_SLL: self = .linuxCooked
        case DLT_LINUX_SLL2: self = .linuxCooked2
        // DLT_RAW is 12 or 14 depending on the platform; 101 is LINKTYPE_RAW should libpcap not map it.
        case DLT_RAW, 12, 14, 101, DLT_IPV4, DLT_IPV6: self = .rawIP
        case DLT_NULL: self = .null
        case DLT_LOOP, 108: self = .loop
        default: return nil
        }
    }

    static let supportedNames = "Ethernet, Linux cooked (SLL and SLL2), raw IP, NULL/loopback"

    /// libpcap's name for a DLT_ value, e.g. "EN10MB".
    static func name(of dlt: Int32) -> String {
        guard let name = pcap_datalink_val_to_name(dlt) else { return "DLT \(dlt)" }
        return "\(String(cString: name)) (DLT \(dlt))"
    }

    /// The offset of the IP header in `frame`, or nil when the frame carries no IP.
    func ipOffset(in frame: [UInt8]) -> Int? {
        switch self {
        case .rawIP:
            return frame.isEmpty ? nil : 0
        case .null, .loop:
            // A 4-byte address family in the capturing host's byte order (NULL) or network
            // order (LOOP). AF_INET is 2 everywhere; AF_INET6 is 10, 24, 28 or 30 by OS. The
            // version nibble that follows settles it.
            guard frame.count > 4 else { return nil }
            let families: Set<UInt32> = [2, 10, 24, 28, 30]
            let little = UInt32(frame[0]) | UInt32(frame[1]) << 8 | UInt32(frame[2]) << 16 | UInt32(frame[3]) << 24
            let big = UInt32(frame[3]) | UInt32(frame[2]) << 8 | UInt32(frame[1]) << 16 | UInt32(frame[0]) << 24
            guard families.contains(little) || families.contains(big) else { return nil }
            return 4
        case .ethernet:
            var offset = 12
            while offset + 2 <= frame.count {
                let type = UInt16(frame[offset]) << 8 | UInt16(frame[offset + 1])
                switch type {
                case 0x8100, 0x88a8, 0x9100: offset += 4  // VLAN tags
                case 0x0800, 0x86dd: return offset + 2
                case 0x8864:
                    // PPPoE session: 6-byte header, then the PPP protocol (0x0021 IPv4, 0x0057 IPv6).
                    let ppp = offset + 8
                    guard ppp + 2 <= frame.count else { return nil }
                    let proto = UInt16(frame[ppp]) << 8 | UInt16(frame[ppp + 1])
                    return proto == 0x0021 || proto == 0x0057 ? ppp + 2 : nil
                case 0x8847:
                    // MPLS: labels until the bottom-of-stack bit.
                    var label = offset + 2
                    while label + 4 <= frame.count {
                        if frame[label + 2] & 0x01 != 0 { return label + 4 < frame.count ? label + 4 : nil }
                        label += 4
                    }
                    return nil
                default: return nil
                }
            }
            return nil
        case .linuxCooked:
            guard frame.count >= 16 else { return nil }
            return Self.isIP(UInt16(frame[14]) << 8 | UInt16(frame[15])) ? 16 : nil
        case .linuxCooked2:
            guard frame.count >= 20 else { return nil }
            return Self.isIP(UInt16(frame[0]) << 8 | UInt16(frame[1])) ? 20 : nil
        }
    }

    private static func isIP(_ etherType: UInt16) -> Bool { etherType == 0x0800 || etherType == 0x86dd }
}
