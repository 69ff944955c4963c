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
        "outage": ["kind"],
        "portal": ["answer", "tls"],
    ]

    /// Builds a toxic from a request body; every problem is a 400 with a message saying what to send.
    init(json: [String: Any]) throws {
        guard let type = json["type"] as? String else { throw APIError.badRequest("missing required field: type") }
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
                if Toxic.isStandIn(type), !(value is String) {
                    throw Toxic.standInTypeError(type: type, key: key, value: value)
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
            case ("outage", _), ("portal", _): attributes[key] = .string(Toxic.standInDefaults[key] ?? "")
            case ("profile", "name"): throw APIError.badRequest("a profile toxic needs attributes.name, one of \(LinkProfile.all.map(\.name).joined(separator: ", "))")
            default: attributes[key] = .number(0)
            }
        }
    }

    /// The JSON object Toxiproxy shows for a toxic.
    var json: [String: Any] {
        ["name": name, "type": type, "stream": stream.rawValue, "toxicity": toxicity,
         "attributes": attributes.mapValues(\.json)]
    }
}

/// JSON `null` as Foundation decodes it.
typealias NSNullLike = NSNull

/// A JSON number as a Double.
func number(_ value: Any) -> Double? {
    if let n = value as? NSNumber { return n.doubleValue }
    return value as? Double
}
