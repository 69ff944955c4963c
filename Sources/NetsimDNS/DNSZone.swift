import NetsimCore

/// What netsim's resolver answers: a few names it knows (each with its addresses), NXDOMAIN for
/// every other name (it is no recursive resolver: nothing is looked up elsewhere, nothing leaves
/// the machine), and the ``DNSFaults`` on top. Pure: a query in, a decision out; the server
/// carries the decision out on time.
public struct DNSZone: Sendable {
    /// Lower-cased names without the trailing dot → their addresses (4 or 16 bytes each).
    public private(set) var names: [String: [[UInt8]]] = [:]
    public var faults: DNSFaults
    /// TTL of every answer. Zero: nothing caches netsim's answers (a caching stub would hide the
    /// delay after the first lookup), so every lookup the client makes crosses the link again.
    public var ttl: UInt32 = 0

    public init(faults: DNSFaults = .none) {
        self.faults = faults
    }

    /// Adds `address` (4 or 16 bytes) to `name` (matched without case or a trailing dot).
    public mutating func add(_ name: String, address: [UInt8]) {
        precondition(address.count == 4 || address.count == 16)
        names[Self.key(name), default: []].append(address)
    }

    /// The name's own addresses, else those of the closest wildcard above it (`*.test` answers
    /// `a.test` and `b.a.test`, not `test`; RFC 4592 in spirit, without its empty-non-terminal rules).
    func addresses(for name: String) -> [[UInt8]]? {
        let key = Self.key(name)
        if let exact = names[key] { return exact }
        var labels = key.split(separator: ".").dropFirst()
        while !labels.isEmpty {
            if let wildcard = names["*." + labels.joined(separator: ".")] { return wildcard }
            labels = labels.dropFirst()
        }
        return nil
    }

    static func key(_ name: String) -> String {
        (name.hasSuffix(".") ? String(name.dropLast()) : name).lowercased()
    }

    /// What to do with one query: the response to send (nil: stay silent) and a word for the log.
    public struct Decision: Sendable {
        public var response: DNSMessage?
        /// `198.18.0.1`, `NODATA`, `NXDOMAIN`, `SERVFAIL`, `no answer (--dns-fail timeout)`, …
        public var result: String
        /// How long to wait before sending (the faults' delay; zero for malformed queries).
        public var delay: Duration
    }

    public func decide(_ query: DNSMessage) -> Decision {
        func reply(_ rcode: DNSResponseCode, _ answers: [DNSRecord] = [], note: String? = nil) -> Decision {
            let text = answers.isEmpty ? (rcode == .noError ? "NODATA" : rcode.description) : answers.compactMap(\.addressText).joined(separator: " ")
            return Decision(response: query.response(rcode: rcode, answers: answers), result: text + (note.map { " (\($0))" } ?? ""), delay: faults.delay)
        }
        guard !query.isResponse else { return Decision(response: nil, result: "ignored (a response, not a query)", delay: .zero) }
        guard query.opcode == 0 else { return reply(.notImplemented, note: "opcode \(query.opcode)") }
        guard query.questions.count == 1, let question = query.questions.first else {
            return reply(.formatError, note: "\(query.questions.count) questions")
        }
        guard question.dnsClass == dnsClassInternet else { return reply(.refused, note: "class \(question.dnsClass)") }
        switch faults.failure {
        case .nxdomain: return reply(.nameError, note: "--dns-fail nxdomain")
        case .servfail: return reply(.serverFailure, note: "--dns-fail servfail")
        case .timeout: return Decision(response: nil, result: "no answer (--dns-fail timeout)", delay: .zero)
        case nil: break
        }
        guard let addresses = addresses(for: question.name) else { return reply(.nameError) }
        let size = question.type == .a ? 4 : question.type == .aaaa ? 16 : -1
        let answers = addresses.filter { $0.count == size }.map { DNSRecord.address(name: question.name, bytes: $0, ttl: ttl) }
        return reply(.noError, answers)
    }
}
