/// One end of a synthesized TCP conversation: an IPv4 (4 bytes) or IPv6 (16 bytes) address and
/// a port.
public struct PacketEndpoint: Hashable, Sendable, CustomStringConvertible {
    public var address: [UInt8]
    public var port: UInt16

    public init(address: [UInt8], port: UInt16) {
        precondition(address.count == 4 || address.count == 16, "an IP address has 4 or 16 bytes")
        self.address = address
        self.port = port
    }

    public var isIPv6: Bool { address.count == 16 }

    /// `10.0.0.2:80`, `[::1]:8080`: as `--flow` takes it (QA 52: replay's notes printed
    /// `::1:44469`, which `--flow` refuses).
    public var description: String { isIPv6 ? "[\(IPAddressText.format(address))]:\(port)" : "\(IPAddressText.format(address)):\(port)" }
}

/// TCP header flags.
public struct TCPFlags: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let fin = TCPFlags(rawValue: 0x01)
    public static let syn = TCPFlags(rawValue: 0x02)
    public static let rst = TCPFlags(rawValue: 0x04)
    public static let psh = TCPFlags(rawValue: 0x08)
    public static let ack = TCPFlags(rawValue: 0x10)
}

/// Builds IPv4/IPv6 + TCP packets byte by byte, with real checksums.
///
/// Real checksums (not zero, not a fixed fake) so that Wireshark and tshark with checksum
/// validation turned on show no errors, and so that any tool that trusts them can.
enum SyntheticPacket {
    /// The largest payload one packet carries: an IPv4 packet of 65,535 bytes less 40 bytes of
    /// headers (it also fits an IPv6 payload-length field with the 20-byte TCP header).
    static let maximumPayload = 65_495

    /// MSS and window-scale options for SYN and SYN-ACK: window scaling (shift 7, about 8 MiB)
    /// keeps tshark from calling a large relay batch "window full".
    static let synOptions: [UInt8] = [2, 4, UInt8(maximumPayload >> 8), UInt8(maximumPayload & 0xff), 1, 3, 3, 7]

    static func tcp(
        from source: PacketEndpoint, to destination: PacketEndpoint, seq: UInt32, ack: UInt32,
        flags: TCPFlags, window: UInt16 = 0xffff, options: [UInt8] = [], ipID: UInt16,
        payload: UnsafeRawBufferPointer
    ) -> [UInt8] {
        precondition(options.count % 4 == 0 && options.count <= 40)
        let tcpLength = 20 + options.count + payload.count
        let ipHeaderLength = source.isIPv6 ? 40 : 20
        var packet = [UInt8](repeating: 0, count: ipHeaderLength + tcpLength)
        if source.isIPv6 {
            packet[0] = 0x60
            put16(&packet, 4, UInt16(tcpLength))
            packet[6] = 6  // next header: TCP
            packet[7] = 64  // hop limit
            packet.replaceSubrange(8..<24, with: source.address)
            packet.replaceSubrange(24..<40, with: destination.address)
        } else {
            packet[0] = 0x45
            put16(&packet, 2, UInt16(ipHeaderLength + tcpLength))
            put16(&packet, 4, ipID)
            put16(&packet, 6, 0x4000)  // don't fragment
            packet[8] = 64  // TTL
            packet[9] = 6  // TCP
            packet.replaceSubrange(12..<16, with: source.address)
            packet.replaceSubrange(16..<20, with: destination.address)
            put16(&packet, 10, checksum(packet[0..<20]))
        }
        let t = ipHeaderLength
        put16(&packet, t, source.port)
        put16(&packet, t + 2, destination.port)
        put32(&packet, t + 4, seq)
        put32(&packet, t + 8, flags.contains(.ack) ? ack : 0)
        packet[t + 12] = UInt8((20 + options.count) / 4) << 4
        packet[t + 13] = flags.rawValue
        put16(&packet, t + 14, window)
        packet.replaceSubrange((t + 20)..<(t + 20 + options.count), with: options)
        if payload.count > 0 {
            packet.withUnsafeMutableBytes { raw in
                UnsafeMutableRawBufferPointer(rebasing: raw[(t + 20 + options.count)...]).copyMemory(from: payload)
            }
        }
        // The pseudo-header (addresses, protocol, length) and the whole segment.
        var sum = sumWords(source.address[...]) + sumWords(destination.address[...]) + 6 + UInt64(tcpLength)
        sum += sumWords(packet[t...])
        put16(&packet, t + 16, fold(sum))
        return packet
    }

    /// The Internet checksum of `bytes`.
    static func checksum(_ bytes: ArraySlice<UInt8>) -> UInt16 { fold(sumWords(bytes)) }

    /// Sums big-endian 16-bit words (an odd last byte is padded with zero).
    static func sumWords(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        bytes.withUnsafeBytes { raw -> UInt64 in
            var sum: UInt64 = 0
            var i = 0
            let n = raw.count
            while i + 1 < n {
                sum &+= UInt64(raw[i]) << 8 | UInt64(raw[i + 1])
                i += 2
            }
            if i < n { sum &+= UInt64(raw[i]) << 8 }
            return sum
        }
    }

    static func fold(_ value: UInt64) -> UInt16 {
        var sum = value
        while sum >> 16 != 0 { sum = (sum & 0xffff) + (sum >> 16) }
        return ~UInt16(sum)
    }

    private static func put16(_ bytes: inout [UInt8], _ at: Int, _ value: UInt16) {
        bytes[at] = UInt8(value >> 8)
        bytes[at + 1] = UInt8(value & 0xff)
    }

    private static func put32(_ bytes: inout [UInt8], _ at: Int, _ value: UInt32) {
        for i in 0..<4 { bytes[at + i] = UInt8((value >> (24 - 8 * UInt32(i))) & 0xff) }
    }
}
