/// Why bytes are not a DNS message. The reader stops at the first problem; nothing it reads can
/// make it loop, read out of bounds or allocate without bound.
public enum DNSDecodingError: Error, Equatable, Sendable {
    /// The message ends inside the header, a name, a question or a record.
    case truncated
    /// A label length byte with the reserved 0b01/0b10 top bits (RFC 1035 §4.1.4, RFC 6891).
    case badLabelType(UInt8)
    /// A compression pointer that does not point strictly backwards (a loop, or forward).
    case badPointer(Int)
    /// A name longer than 255 bytes on the wire (RFC 1035 §2.3.4).
    case nameTooLong
    /// Bytes left over after the last section.
    case trailingBytes(Int)
}

extension DNSMessage {
    /// Reads a whole message; throws ``DNSDecodingError`` on anything malformed.
    public init(decoding bytes: [UInt8]) throws {
        var reader = DNSReader(bytes)
        let id = try reader.u16()
        let flags = try reader.u16()
        let counts = try (0..<4).map { _ in Int(try reader.u16()) }
        self.init(id: id, isResponse: flags & 0x8000 != 0, opcode: UInt8((flags >> 11) & 0x0F),
                  isAuthoritative: flags & 0x0400 != 0, isTruncated: flags & 0x0200 != 0,
                  recursionDesired: flags & 0x0100 != 0, recursionAvailable: flags & 0x0080 != 0,
                  rcode: DNSResponseCode(rawValue: UInt8(flags & 0x0F)))
        // Each count is checked against what is left before anything is reserved: a question
        // takes at least 5 bytes, a record at least 11, so a lying count fails fast.
        guard counts[0] * 5 + (counts[1] + counts[2] + counts[3]) * 11 <= reader.remaining else { throw DNSDecodingError.truncated }
        for _ in 0..<counts[0] {
            questions.append(DNSQuestion(name: try reader.name(), type: DNSType(rawValue: try reader.u16()), dnsClass: try reader.u16()))
        }
        answers = try (0..<counts[1]).map { _ in try reader.record() }
        authority = try (0..<counts[2]).map { _ in try reader.record() }
        additional = try (0..<counts[3]).map { _ in try reader.record() }
        if reader.remaining > 0 { throw DNSDecodingError.trailingBytes(reader.remaining) }
    }

    /// The header's ID and QR/opcode/RD bits and the first question when the rest is malformed:
    /// enough to answer FORMERR (RFC 1035 says a server should) to the right query.
    public static func headerOnly(_ bytes: [UInt8]) -> DNSMessage? {
        guard bytes.count >= 12 else { return nil }
        let flags = UInt16(bytes[2]) << 8 | UInt16(bytes[3])
        return DNSMessage(id: UInt16(bytes[0]) << 8 | UInt16(bytes[1]), isResponse: flags & 0x8000 != 0,
                          opcode: UInt8((flags >> 11) & 0x0F), recursionDesired: flags & 0x0100 != 0)
    }
}

/// A cursor over a message's bytes that knows the whole message (compression pointers point
/// into it from anywhere).
struct DNSReader {
    private let bytes: [UInt8]
    private(set) var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var remaining: Int { bytes.count - offset }

    mutating func u8() throws -> UInt8 {
        guard offset < bytes.count else { throw DNSDecodingError.truncated }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func u16() throws -> UInt16 { UInt16(try u8()) << 8 | UInt16(try u8()) }

    mutating func u32() throws -> UInt32 { UInt32(try u16()) << 16 | UInt32(try u16()) }

    mutating func take(_ count: Int) throws -> [UInt8] {
        guard count <= remaining else { throw DNSDecodingError.truncated }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    /// A domain name, following compression pointers (RFC 1035 §4.1.4). Every pointer must point
    /// before the label that holds it, so each jump goes strictly backwards and the walk ends.
    mutating func name() throws -> String {
        var labels: [String] = []
        var position = offset
        var wireLength = 0
        var jumped = false
        while true {
            guard position < bytes.count else { throw DNSDecodingError.truncated }
            let length = bytes[position]
            switch length >> 6 {
            case 0b00:
                if length == 0 {
                    if !jumped { offset = position + 1 }
                    wireLength += 1
                    guard wireLength <= 255 else { throw DNSDecodingError.nameTooLong }
                    return labels.joined(separator: ".")
                }
                let start = position + 1, end = start + Int(length)
                guard end <= bytes.count else { throw DNSDecodingError.truncated }
                wireLength += Int(length) + 1
                guard wireLength <= 255 else { throw DNSDecodingError.nameTooLong }
                labels.append(String(decoding: bytes[start..<end], as: UTF8.self))
                position = end
            case 0b11:
                guard position + 1 < bytes.count else { throw DNSDecodingError.truncated }
                let target = Int(length & 0x3F) << 8 | Int(bytes[position + 1])
                guard target < position else { throw DNSDecodingError.badPointer(target) }
                if !jumped { offset = position + 2 }
                jumped = true
                position = target
            default:
                throw DNSDecodingError.badLabelType(length)
            }
        }
    }

    mutating func record() throws -> DNSRecord {
        let name = try name()
        let type = DNSType(rawValue: try u16())
        let dnsClass = try u16()
        let ttl = try u32()
        let length = Int(try u16())
        return DNSRecord(name: name, type: type, dnsClass: dnsClass, ttl: ttl, data: try take(length))
    }
}
