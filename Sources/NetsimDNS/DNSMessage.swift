#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A DNS message (RFC 1035 §4.1): the header, the questions and the three record sections.
///
/// A plain value: ``DNSMessage/init(decoding:)`` reads wire bytes (following compression
/// pointers, refusing anything malformed with a ``DNSDecodingError``), ``encoded()`` writes them
/// (compressing names that repeat). Records keep their RDATA as bytes; A and AAAA have typed
/// accessors. Only what netsim's resolver needs, but all of it correct: a message this type
/// writes is one any resolver reads, and no input bytes can crash the reader.
public struct DNSMessage: Equatable, Sendable {
    public var id: UInt16
    /// QR: a response (true) or a query.
    public var isResponse: Bool
    public var opcode: UInt8
    /// AA: the answer comes from the zone's authority (netsim's names are its own).
    public var isAuthoritative: Bool
    /// TC: the answer did not fit a UDP datagram; ask again over TCP.
    public var isTruncated: Bool
    public var recursionDesired: Bool
    public var recursionAvailable: Bool
    public var rcode: DNSResponseCode
    public var questions: [DNSQuestion]
    public var answers: [DNSRecord]
    public var authority: [DNSRecord]
    public var additional: [DNSRecord]

    public init(id: UInt16, isResponse: Bool = false, opcode: UInt8 = 0, isAuthoritative: Bool = false,
                isTruncated: Bool = false, recursionDesired: Bool = true, recursionAvailable: Bool = false,
                rcode: DNSResponseCode = .noError, questions: [DNSQuestion] = [], answers: [DNSRecord] = [],
                authority: [DNSRecord] = [], additional: [DNSRecord] = []) {
        self.id = id
        self.isResponse = isResponse
        self.opcode = opcode
        self.isAuthoritative = isAuthoritative
        self.isTruncated = isTruncated
        self.recursionDesired = recursionDesired
        self.recursionAvailable = recursionAvailable
        self.rcode = rcode
        self.questions = questions
        self.answers = answers
        self.authority = authority
        self.additional = additional
    }

    /// The largest message a UDP answer may be without EDNS (RFC 1035 §4.2.1).
    public static let udpLimit = 512
}

/// RCODE (RFC 1035 §4.1.1), the four bits of the header that say how a query went.
public struct DNSResponseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue & 0x0F }

    public static let noError = DNSResponseCode(rawValue: 0)
    public static let formatError = DNSResponseCode(rawValue: 1)
    public static let serverFailure = DNSResponseCode(rawValue: 2)
    public static let nameError = DNSResponseCode(rawValue: 3)
    public static let notImplemented = DNSResponseCode(rawValue: 4)
    public static let refused = DNSResponseCode(rawValue: 5)

    /// The mnemonic dig prints: NOERROR, FORMERR, SERVFAIL, NXDOMAIN, NOTIMP, REFUSED.
    public var description: String {
        Int(rawValue) < Self.mnemonics.count ? Self.mnemonics[Int(rawValue)] : "RCODE\(rawValue)"
    }

    private static let mnemonics = ["NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED"]
}

/// A record or question TYPE (RFC 1035 §3.2.2, RFC 3596 for AAAA).
public struct DNSType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let a = DNSType(rawValue: 1)
    public static let cname = DNSType(rawValue: 5)
    public static let aaaa = DNSType(rawValue: 28)
    public static let opt = DNSType(rawValue: 41)
    public static let https = DNSType(rawValue: 65)

    public var description: String {
        switch self {
        case .a: "A"
        case .cname: "CNAME"
        case .aaaa: "AAAA"
        case .opt: "OPT"
        case .https: "HTTPS"
        default: "TYPE\(rawValue)"
        }
    }
}

/// CLASS IN, the only one netsim answers.
public let dnsClassInternet: UInt16 = 1

/// One entry of the question section.
public struct DNSQuestion: Equatable, Sendable {
    /// Dotted, without the trailing dot, as sent (case kept: RFC 4343 says compare without it).
    public var name: String
    public var type: DNSType
    public var dnsClass: UInt16

    public init(name: String, type: DNSType, dnsClass: UInt16 = dnsClassInternet) {
        self.name = name
        self.type = type
        self.dnsClass = dnsClass
    }
}

/// One resource record; RDATA as the bytes on the wire.
public struct DNSRecord: Equatable, Sendable {
    public var name: String
    public var type: DNSType
    public var dnsClass: UInt16
    public var ttl: UInt32
    public var data: [UInt8]

    public init(name: String, type: DNSType, dnsClass: UInt16 = dnsClassInternet, ttl: UInt32, data: [UInt8]) {
        self.name = name
        self.type = type
        self.dnsClass = dnsClass
        self.ttl = ttl
        self.data = data
    }

    /// An A record (4 address bytes) or AAAA record (16).
    public static func address(name: String, bytes: [UInt8], ttl: UInt32) -> DNSRecord {
        precondition(bytes.count == 4 || bytes.count == 16)
        return DNSRecord(name: name, type: bytes.count == 4 ? .a : .aaaa, ttl: ttl, data: bytes)
    }

    /// The address an A or AAAA record holds, as text (`198.18.0.1`, `2001:2::1`); nil otherwise.
    public var addressText: String? {
        switch (type, data.count) {
        case (.a, 4): return data.map(String.init).joined(separator: ".")
        case (.aaaa, 16): return Self.ipv6Text(data)
        default: return nil
        }
    }

    /// RFC 5952 text through inet_ntop, as `IPv6Address` writes it (e.g. `2001:2::1`).
    static func ipv6Text(_ bytes: [UInt8]) -> String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        bytes.withUnsafeBytes { raw in _ = inet_ntop(AF_INET6, raw.baseAddress, &text, socklen_t(text.count)) }
        return String(cString: text)
    }
}
