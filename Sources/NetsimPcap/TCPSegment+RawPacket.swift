/// TCP segments as raw IP packets, for code that handles live packets (the packet path of
/// `netsim shell`): the same decoder and builder the captures use, so a segment read off a TUN
/// device and one written into it follow the same rules (bounds checks, real checksums).
extension TCPSegment {
    /// Decodes a whole IPv4 or IPv6 packet; nil when it is not an unfragmented TCP segment with
    /// intact headers.
    public init?(ipPacket: [UInt8]) {
        guard case .success(let segment) = SegmentDecoder.decode(ipPacket, from: 0, time: 0) else { return nil }
        self = segment
    }

    /// The sequence space the segment occupies: its payload, plus one for SYN and one for FIN.
    public var sequenceLength: UInt32 {
        UInt32(truncatingIfNeeded: payloadLength) &+ (flags.contains(.syn) ? 1 : 0) &+ (flags.contains(.fin) ? 1 : 0)
    }

    /// A segment without payload as a raw IP packet, checksums computed.
    public static func bare(from source: PacketEndpoint, to destination: PacketEndpoint, seq: UInt32, ack: UInt32,
                            flags: TCPFlags, window: UInt16 = 0, ipID: UInt16 = 0) -> [UInt8] {
        [UInt8]().withUnsafeBytes { empty in
            SyntheticPacket.tcp(from: source, to: destination, seq: seq, ack: ack, flags: flags, window: window, ipID: ipID, payload: empty)
        }
    }
}
