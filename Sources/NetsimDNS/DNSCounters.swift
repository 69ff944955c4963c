/// What a ``DNSServer`` did, for `--stats` and the shell's summary line.
public struct DNSCounters: Equatable, Sendable, Codable {
    /// Messages received (UDP datagrams and TCP frames).
    public var queries = 0
    /// Answers with addresses.
    public var answered = 0
    /// NOERROR without an answer of the type asked (e.g. AAAA for an IPv4-only name).
    public var noData = 0
    public var nxdomain = 0
    public var servfail = 0
    /// FORMERR, NOTIMP, REFUSED: queries netsim does not answer.
    public var otherErrors = 0
    /// Left unanswered (`--dns-fail timeout`, or not a query at all).
    public var unanswered = 0
    /// Answers sent with TC set (too big for UDP).
    public var truncated = 0

    public init() {}

    mutating func count(_ response: DNSMessage?, truncated wasTruncated: Bool) {
        guard let response else { unanswered += 1; return }
        if wasTruncated { truncated += 1 }
        switch response.rcode {
        case .noError: if response.answers.isEmpty { noData += 1 } else { answered += 1 }
        case .nameError: nxdomain += 1
        case .serverFailure: servfail += 1
        default: otherErrors += 1
        }
    }

    /// `5 queries: 3 answered, 2 NXDOMAIN` (only what is not zero).
    public var summary: String {
        var parts: [String] = []
        for (count, name) in [(answered, "answered"), (noData, "NODATA"), (nxdomain, "NXDOMAIN"), (servfail, "SERVFAIL"),
                              (otherErrors, "refused as malformed or unsupported"), (unanswered, "unanswered"),
                              (truncated, "truncated (TC)")] where count > 0 {
            parts.append("\(count) \(name)")
        }
        return "\(queries) \(queries == 1 ? "query" : "queries")" + (parts.isEmpty ? "" : ": " + parts.joined(separator: ", "))
    }
}
