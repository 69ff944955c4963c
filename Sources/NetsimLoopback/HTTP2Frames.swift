/// HTTP/2 frames from raw bytes (RFC 9113 §4.1): enough for a test to read types, streams and
/// settings of what a server sent.
public enum HTTP2Frames {
    public struct Frame: Sendable {
        public var type: UInt8
        public var flags: UInt8
        public var stream: Int
        public var payload: [UInt8]
    }

    public static func parse(_ bytes: [UInt8]) -> [Frame] {
        var frames: [Frame] = []
        var index = 0
        while index + 9 <= bytes.count {
            let length = Int(bytes[index]) << 16 | Int(bytes[index + 1]) << 8 | Int(bytes[index + 2])
            guard index + 9 + length <= bytes.count else { break }
            let stream = bytes[(index + 5)..<(index + 9)].reduce(0) { $0 << 8 | Int($1) } & 0x7fff_ffff
            frames.append(Frame(type: bytes[index + 3], flags: bytes[index + 4], stream: stream,
                                payload: Array(bytes[(index + 9)..<(index + 9 + length)])))
            index += 9 + length
        }
        return frames
    }
}

extension HTTP2Frames.Frame {
    /// A SETTINGS frame's parameters (identifier → value).
    public var settings: [UInt16: UInt32] {
        guard type == 4 else { return [:] }
        var result: [UInt16: UInt32] = [:]
        var index = 0
        while index + 6 <= payload.count {
            let id = UInt16(payload[index]) << 8 | UInt16(payload[index + 1])
            let value = payload[(index + 2)..<(index + 6)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            result[id] = value
            index += 6
        }
        return result
    }
}
