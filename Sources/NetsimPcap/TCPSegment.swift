/// One TCP segment decoded from a captured packet.
public struct TCPSegment: Sendable {
    public var time: Int64
    public var source: PacketEndpoint
    public var destination: PacketEndpoint
    public var seq: UInt32
    public var ack: UInt32
    public var flags: TCPFlags
    public var window: UInt16
    /// The window-scale shift a SYN offers, if it has the option.
    public var windowScale: UInt8?
    /// The payload length the headers declare (what was on the wire).
    public var payloadLength: Int
    /// The payload bytes captured: fewer than `payloadLength` when the snaplen cut the packet.
    public var payload: [UInt8]

    public var isTruncated: Bool { payload.count < payloadLength }
}

/// Why a packet yielded no TCP segment (counted, reported, never fatal).
enum SkipReason: String, CaseIterable {
    case notIP = "not IP"
    case notTCP = "not TCP"
    case fragment = "IP fragments"
    case malformed = "malformed IP/TCP headers"
    case headerCut = "headers cut by the snaplen"
}

/// IPv4/IPv6 and TCP header decoding, bounds-checked at every step: a damaged packet is
/// skipped, never trusted.
enum SegmentDecoder {
    static func decode(_ bytes: [UInt8], from start: Int, time: Int64) -> Result<TCPSegment, SkipError> {
        guard start < bytes.count else { return .failure(SkipError(.notIP)) }
        let version = bytes[start] >> 4
        var tcpStart: Int
        var ipEnd: Int
        var srcAddress: [UInt8]
        var dstAddress: [UInt8]
        if version == 4 {
            guard bytes.count - start >= 20 else { return .failure(SkipError(.headerCut)) }
            let headerLength = Int(bytes[start] & 0x0f) * 4
            guard headerLength >= 20 else { return .failure(SkipError(.malformed)) }
            guard bytes.count - start >= headerLength else { return .failure(SkipError(.headerCut)) }
            let total = Int(bytes[start + 2]) << 8 | Int(bytes[start + 3])
            let fragment = (Int(bytes[start + 6]) << 8 | Int(bytes[start + 7])) & 0x3fff
            guard fragment == 0 else { return .failure(SkipError(.fragment)) }
            guard bytes[start + 9] == 6 else { return .failure(SkipError(.notTCP)) }
            // A total length of 0 is what segmentation offload leaves in captures from the sender.
            if total == 0 {
                ipEnd = Int.max
            } else {
                guard total >= headerLength else { return .failure(SkipError(.malformed)) }
                ipEnd = start + total
            }
            srcAddress = Array(bytes[(start + 12)..<(start + 16)])
            dstAddress = Array(bytes[(start + 16)..<(start + 20)])
            tcpStart = start + headerLength
        } else if version == 6 {
            guard bytes.count - start >= 40 else { return .failure(SkipError(.headerCut)) }
            let payloadLength = Int(bytes[start + 4]) << 8 | Int(bytes[start + 5])
            ipEnd = payloadLength == 0 ? Int.max : start + 40 + payloadLength
            srcAddress = Array(bytes[(start + 8)..<(start + 24)])
            dstAddress = Array(bytes[(start + 24)..<(start + 40)])
            var next = bytes[start + 6]
            tcpStart = start + 40
            // Skip extension headers: hop-by-hop, routing, destination options; fragments are skipped.
            var hops = 0
            while next != 6 {
                hops += 1
                guard hops <= 8 else { return .failure(SkipError(.malformed)) }
                switch next {
                case 0, 43, 60:
                    guard tcpStart + 2 <= bytes.count else { return .failure(SkipError(.headerCut)) }
                    next = bytes[tcpStart]
                    tcpStart += (Int(bytes[tcpStart + 1]) + 1) * 8
                case 44:
                    return .failure(SkipError(.fragment))
                default:
                    return .failure(SkipError(.notTCP))
                }
            }
        } else {
            return .failure(SkipError(.notIP))
        }
        guard tcpStart + 20 <= bytes.count else { return .failure(SkipError(.headerCut)) }
        let dataOffset = Int(bytes[tcpStart + 12] >> 4) * 4
        guard dataOffset >= 20, tcpStart + dataOffset <= ipEnd else { return .failure(SkipError(.malformed)) }
        guard tcpStart + dataOffset <= bytes.count else { return .failure(SkipError(.headerCut)) }
        let payloadStart = tcpStart + dataOffset
        let declaredEnd = ipEnd == Int.max ? bytes.count : ipEnd
        let capturedEnd = min(declaredEnd, bytes.count)
        let sourcePort = UInt16(bytes[tcpStart]) << 8 | UInt16(bytes[tcpStart + 1])
        let destinationPort = UInt16(bytes[tcpStart + 2]) << 8 | UInt16(bytes[tcpStart + 3])
        let flags = TCPFlags(rawValue: bytes[tcpStart + 13] & 0x1f)
        return .success(TCPSegment(
            time: time,
            source: PacketEndpoint(address: srcAddress, port: sourcePort),
            destination: PacketEndpoint(address: dstAddress, port: destinationPort),
            seq: read32(bytes, tcpStart + 4), ack: read32(bytes, tcpStart + 8), flags: flags,
            window: UInt16(bytes[tcpStart + 14]) << 8 | UInt16(bytes[tcpStart + 15]),
            windowScale: flags.contains(.syn) ? windowScale(bytes[(tcpStart + 20)..<payloadStart]) : nil,
            payloadLength: declaredEnd - payloadStart,
            payload: Array(bytes[payloadStart..<max(payloadStart, capturedEnd)])))
    }

    struct SkipError: Error {
        var reason: SkipReason
        init(_ reason: SkipReason) { self.reason = reason }
    }

    private static func read32(_ b: [UInt8], _ i: Int) -> UInt32 {
        UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
    }

    /// The window-scale option (kind 3) among TCP options.
    private static func windowScale(_ options: ArraySlice<UInt8>) -> UInt8? {
        var i = options.startIndex
        while i < options.endIndex {
            let kind = options[i]
            if kind == 0 { return nil }
            if kind == 1 { i += 1; continue }
            guard i + 1 < options.endIndex else { return nil }
            let length = Int(options[i + 1])
            guard length >= 2, i + length <= options.endIndex else { return nil }
            if kind == 3, length == 3 { return min(options[i + 2], 14) }
            i += length
        }
        return nil
    }
}
