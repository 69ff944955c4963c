/// How a resolver netsim controls fails a lookup (`--dns-fail`, a scenario's `dns: { fail: … }`).
///
/// The three ways a real lookup goes wrong, as a client sees them: the name does not exist
/// (`nxdomain`, RCODE 3: getaddrinfo says EAI_NONAME and gives up), the resolver is broken
/// (`servfail`, RCODE 2: EAI_AGAIN, a client may retry), or nothing answers at all (`timeout`:
/// the client's resolver waits out its own timeout and attempts, glibc 5 s × 2 by default).
public enum DNSFailure: String, Sendable, CaseIterable, Codable {
    case nxdomain, servfail, timeout

    /// The accepted spellings, for error messages.
    public static let allowedForms = "nxdomain, servfail or timeout"
}

/// The DNS impairment shared by netsim's resolvers (the shell's DNS server, the forward proxy's
/// lookups): every answer `delay` late, or a `failure` instead of the answer.
public struct DNSFaults: Sendable, Equatable {
    /// Added before each answer (or failure) leaves. Network Link Conditioner's "High Latency
    /// DNS" preset adds 3 s.
    public var delay: Duration
    /// Every lookup fails this way; nil: lookups are answered.
    public var failure: DNSFailure?

    public init(delay: Duration = .zero, failure: DNSFailure? = nil) {
        self.delay = delay
        self.failure = failure
    }

    public static let none = DNSFaults()

    public var isEmpty: Bool { delay == .zero && failure == nil }
}

extension DNSFaults: CustomStringConvertible {
    /// `delay 3 s, fail servfail` / `none`.
    public var description: String {
        var parts: [String] = []
        if delay != .zero { parts.append("delay \(delay.compactDescription)") }
        if let failure { parts.append("fail \(failure.rawValue)") }
        return parts.isEmpty ? "none" : parts.joined(separator: ", ")
    }
}
