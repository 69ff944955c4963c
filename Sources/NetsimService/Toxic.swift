import Foundation
import NetsimCore
import NetsimLink
import NetsimRelay

/// A request the API refuses, with the status and message Toxiproxy would send.
public struct APIError: Error, Equatable, Sendable, CustomStringConvertible {
    public var status: Int
    public var message: String
    public init(_ status: Int, _ message: String) {
        self.status = status
        self.message = message
    }
    public var description: String { "\(status): \(message)" }

    static func badRequest(_ message: String) -> APIError { APIError(400, message) }
}

/// Toxiproxy's `stream`: `downstream` is server → client (netsim `down`), `upstream` is
/// client → server (netsim `up`).
public enum ToxicStream: String, Sendable, CaseIterable {
    case upstream, downstream

    public var direction: Direction { self == .upstream ? .up : .down }
}

/// One toxic as the API shows it, with its attributes checked and normalised (defaults filled in).
public struct Toxic: Sendable, Equatable {
    public var name: String
    public var type: String
    public var stream: ToxicStream
    public var toxicity: Double
    /// Attribute values: numbers as `Double`, strings as `String`.
    public var attributes: [String: AttributeValue]

    public enum AttributeValue: Sendable, Equatable {
        case number(Double)
        case string(String)

        var json: Any {
            switch self {
            case .number(let n): n == n.rounded() && abs(n) < 1e15 ? Int(n) as Any : n as Any
            case .string(let s): s
            }
        }
    }

    /// What the toxic does to a relay: changes the link model, or adds fault rules.
    enum Effect: Equatable {
        case link(LinkChange)
        case faults(FaultPlan)
    }

    enum LinkChange: Equatable {
        case latency(Duration, jitter: Duration)
        case bandwidth(DataRate?)
        case slice(Int?, delay: Duration)
        case loss(Probability)
        case profile(LinkConfiguration)
    }

    /// Faults, built when the toxic is applied to a running relay (some depend on the time).
    enum FaultPlan: Equatable {
        /// In force on every connection from now on.
        case now(FaultKind)
        /// Acts `delay` after each connection opened, or `delay` from now on connections already open.
        case after(FaultKind, Duration)
        /// Toxiproxy's timeout: no data passes, and the connection closes after `delay` (never if nil).
        case silenceThenClose(Duration?)
    }

    /// The toxic types, with their attributes and units. netsim's own types follow Toxiproxy's.
    public static let types: [String: [String]] = [
        "latency": ["latency", "jitter"],
        "bandwidth": ["rate"],
        "slicer": ["average_size", "size_variation", "delay"],
        "limit_data": ["bytes"],
        "timeout": ["timeout"],
        "reset_peer": ["timeout"],
        "slow_close": ["delay"],
        "loss": ["percent"],
        "stale": ["close"],
        "idle_close": ["timeout"],
        "profile": ["name"],
    ]

    /// Types named in the issue that this build does not provide yet.
    static let notYetAvailable: [String: String] = [
        "portal": "the portal toxic is not available yet (it comes with the built-in HTTP upstream)",
        "outage": "the outage toxic is not available yet (it comes with the built-in HTTP upstream)",
    ]

    /// Builds a toxic from a request body; every problem is a 400 with a message saying what to send.
    init(json: [String: Any]) throws {
        guard let type = json["type"] as? String else { throw APIError.badRequest("missing required field: type") }
        if let reason = Toxic.notYetAvailable[type] { throw APIError.badRequest(reason) }
        guard Toxic.types[type] != nil else {
            throw APIError.badRequest("invalid toxic type: \(type) (known: \(Toxic.types.keys.sorted().joined(separator: ", ")))")
        }
        let stream: ToxicStream
        switch json["stream"] {
        case nil, is NSNullLike: stream = .downstream
        case let text as String:
            if text.isEmpty {
                stream = .downstream
            } else {
                guard let s = ToxicStream(rawValue: text) else {
                    throw APIError.badRequest("toxic stream must be upstream or downstream, not \(text)")
                }
                stream = s
            }
        default: throw APIError.badRequest("toxic stream must be the string upstream or downstream")
        }
        var name = "\(type)_\(stream.rawValue)"
        if let given = json["name"] {
            guard let text = given as? String else { throw APIError.badRequest("toxic name must be a string") }
            if !text.isEmpty { name = text }
        }
        self.name = name
        self.type = type
        self.stream = stream
        self.toxicity = 1
        self.attributes = [:]
        try update(json: json)
    }

    /// Applies an update body (`toxicity` and/or `attributes`, merged into the current ones).
    mutating func update(json: [String: Any]) throws {
        if let value = json["toxicity"], !(value is NSNullLike) {
            guard let t = number(value), t >= 0, t <= 1 else { throw APIError.badRequest("toxicity must be a number from 0 to 1") }
            toxicity = t
        }
        var merged = attributes
        if let given = json["attributes"], !(given is NSNullLike) {
            guard let dict = given as? [String: Any] else { throw APIError.badRequest("attributes must be a JSON object") }
            let allowed = Toxic.types[type] ?? []
            for (key, value) in dict {
                guard allowed.contains(key) else {
                    throw APIError.badRequest("unknown attribute \(key) for a \(type) toxic (allowed: \(allowed.joined(separator: ", ")))")
                }
                if let n = number(value) {
                    merged[key] = .number(n)
                } else if let s = value as? String {
                    merged[key] = .string(s)
                } else {
                    throw APIError.badRequest("attribute \(key) must be a number or a string")
                }
            }
        }
        var candidate = self
        candidate.attributes = merged
        try candidate.fillDefaults()
        _ = try candidate.effect()
        self = candidate
    }

    private mutating func fillDefaults() throws {
        for key in Toxic.types[type] ?? [] where attributes[key] == nil {
            switch (type, key) {
            case ("stale", "close"): attributes[key] = .string("rst")
            case ("profile", "name"): throw APIError.badRequest("a profile toxic needs attributes.name, one of \(LinkProfile.all.map(\.name).joined(separator: ", "))")
            default: attributes[key] = .number(0)
            }
        }
    }

    /// A non-negative whole number attribute (Toxiproxy's attributes are integers).
    private func count(_ key: String, unit: String) throws -> Int64 {
        guard case .number(let n)? = attributes[key] else { throw APIError.badRequest("attribute \(key) must be a number (\(unit))") }
        guard n >= 0, n <= 1e12, n == n.rounded() else {
            throw APIError.badRequest("attribute \(key) must be a whole number from 0 to 10^12 (\(unit)), not \(n)")
        }
        return Int64(n)
    }

    private func milliseconds(_ key: String) throws -> Duration { .milliseconds(try count(key, unit: "milliseconds")) }

    func effect() throws -> Effect {
        switch type {
        case "latency":
            return .link(.latency(try milliseconds("latency"), jitter: try milliseconds("jitter")))
        case "bandwidth":
            let rate = try count("rate", unit: "KB/s")
            return .link(.bandwidth(rate == 0 ? nil : DataRate(bitsPerSecond: Double(rate) * 8_000)))
        case "slicer":
            let size = try count("average_size", unit: "bytes")
            _ = try count("size_variation", unit: "bytes")
            let delay = Duration.microseconds(try count("delay", unit: "microseconds"))
            return .link(.slice(size == 0 ? nil : Int(size), delay: delay))
        case "loss":
            guard case .number(let p)? = attributes["percent"], p >= 0, p <= 100 else {
                throw APIError.badRequest("attribute percent must be a number from 0 to 100")
            }
            return .link(.loss(.percent(p)))
        case "profile":
            guard case .string(let name)? = attributes["name"], let profile = LinkProfile.named(name) else {
                throw APIError.badRequest("attribute name must be a link profile: \(LinkProfile.all.map(\.name).joined(separator: ", "))")
            }
            return .link(.profile(profile.link))
        case "limit_data":
            guard stream == .downstream else {
                throw APIError.badRequest("limit_data counts bytes server → client in netsim: use stream downstream")
            }
            return .faults(.now(.limit(bytes: Int(try count("bytes", unit: "bytes")))))
        case "timeout":
            let t = try milliseconds("timeout")
            return .faults(.silenceThenClose(t == .zero ? nil : t))
        case "reset_peer":
            let t = try milliseconds("timeout")
            return .faults(t == .zero ? .now(.rst) : .after(.rst, t))
        case "slow_close":
            return .faults(.now(.slowClose(try milliseconds("delay"))))
        case "idle_close":
            let t = try milliseconds("timeout")
            guard t > .zero else { throw APIError.badRequest("attribute timeout of idle_close must be at least 1 (milliseconds)") }
            return .faults(.now(.idleClose(t)))
        case "stale":
            switch attributes["close"] {
            case .string("rst")?: return .faults(.now(.stale(.rst)))
            case .string("fin")?: return .faults(.now(.stale(.fin)))
            default: throw APIError.badRequest("attribute close of stale must be \"rst\" or \"fin\"")
            }
        default:
            throw APIError.badRequest("invalid toxic type: \(type)")
        }
    }

    /// The fault rules to add to a running relay.
    func faultRules() -> [FaultRule] {
        guard case .faults(let plan)? = try? effect(), toxicity > 0 else { return [] }
        let p = Probability(fraction: toxicity)
        // One rule for new and open connections alike: the relay times an `after` rule from
        // each connection's opening, or from the rule's arrival for connections already open.
        func after(_ kind: FaultKind, _ delay: Duration) -> [FaultRule] {
            [FaultRule(kind, trigger: .after(delay), probability: p)]
        }
        switch plan {
        case .now(let kind): return [FaultRule(kind, probability: p)]
        case .after(let kind, let delay): return after(kind, delay)
        case .silenceThenClose(let delay):
            return [FaultRule(.blackhole, probability: p)] + (delay.map { after(.fin, $0) } ?? [])
        }
    }

    /// The JSON object Toxiproxy shows for a toxic.
    var json: [String: Any] {
        ["name": name, "type": type, "stream": stream.rawValue, "toxicity": toxicity,
         "attributes": attributes.mapValues(\.json)]
    }

    /// The link model made by a proxy's toxics, in the order they were added (profiles first, so
    /// other toxics refine them). Link toxics with toxicity 0 do nothing; any other toxicity
    /// applies them to every connection.
    /// True for toxics that shape the link (latency, bandwidth, slicer, loss, profile) rather than
    /// inject faults.
    var isLinkToxic: Bool {
        if case .link? = try? effect() { return true }
        return false
    }

    static func link(of toxics: [Toxic]) -> LinkConfiguration {
        var link = LinkConfiguration.unimpaired
        let effects = toxics.filter { $0.toxicity > 0 }.compactMap { toxic -> (Direction, LinkChange)? in
            guard case .link(let change)? = try? toxic.effect() else { return nil }
            return (toxic.stream.direction, change)
        }
        for case (_, .profile(let profile)) in effects { link = profile }
        for (direction, change) in effects {
            switch change {
            case .latency(let latency, let jitter):
                link[direction].latency = latency
                link[direction].jitter = jitter
            case .bandwidth(let rate): link[direction].bandwidth = rate
            case .slice(let size, let delay):
                link[direction].sliceSize = size
                link[direction].sliceDelay = size == nil ? .zero : delay
            case .loss(let p): link[direction].loss = p.fraction > 0 ? .bernoulli(p) : nil
            case .profile: break
            }
        }
        return link
    }
}

/// JSON `null` as Foundation decodes it.
typealias NSNullLike = NSNull

/// A JSON number as a Double.
func number(_ value: Any) -> Double? {
    if let n = value as? NSNumber { return n.doubleValue }
    return value as? Double
}
