import NetsimCore
import NetsimLink
import NetsimRelay

/// Toxiproxy's `stream`: `downstream` is server → client (netsim `down`), `upstream` is
/// client → server (netsim `up`).
public enum ToxicStream: String, Sendable, CaseIterable {
    case upstream, downstream

    public var direction: Direction { self == .upstream ? .up : .down }
}

/// One toxic on a proxy, with its attributes checked and normalised (defaults filled in).
///
/// This is the toxic itself, apart from how it travels: ``ToxicRequest`` and ``ToxicJSON`` are
/// its JSON forms. What a toxic does lives in one place, ``effect()``, which reads only the
/// type, the stream and these typed attributes.
public struct Toxic: Sendable, Equatable {
    public var name: String
    public var type: String
    public var stream: ToxicStream
    public var toxicity: Double
    /// Attribute values, each a number or a string.
    public var attributes: [String: AttributeValue]

    /// A toxic attribute's value: Toxiproxy's attributes are numbers; netsim's stand-in toxics
    /// (`outage`, `portal`) and a few others take strings.
    public enum AttributeValue: Sendable, Equatable {
        case number(Double)
        case string(String)
    }

    /// What the toxic does to a relay: changes the link model, or adds fault rules.
    enum Effect: Equatable {
        case link(LinkChange)
        case faults([ToxicMapping.Step])
    }

    enum LinkChange: Equatable {
        case latency(Duration, jitter: Duration)
        case bandwidth(DataRate?)
        case slice(Int?, variation: Int, delay: Duration)
        case loss(Probability)
        case profile(LinkConfiguration)
    }

    /// The toxic types, with their attributes: the link toxics, then every fault's toxic from
    /// the catalog.
    public static let types: [String: [String]] = linkTypes.merging(
        FaultCatalog.toxicTypes.map { ($0.type, $0.attributes.map(\.name)) }, uniquingKeysWith: { link, _ in link })

    /// A new toxic of a known type (toxicity 1, no attributes yet: ``update(toxicity:attributes:)``
    /// fills them in). The name defaults to `TYPE_STREAM`, as in Toxiproxy.
    init(name: String?, type: String, stream: ToxicStream) throws {
        try Toxic.checkKnown(type: type)
        self.name = name ?? "\(type)_\(stream.rawValue)"
        self.type = type
        self.stream = stream
        self.toxicity = 1
        self.attributes = [:]
    }

    /// Throws the 400 for a type that is not in ``types``.
    static func checkKnown(type: String) throws {
        guard types[type] == nil else { return }
        throw APIError.badRequest("invalid toxic type: \(type) (known: \(types.keys.sorted().joined(separator: ", ")))")
    }

    /// The 400 for a toxicity that is not a number from 0 to 1 (it is a probability).
    static let toxicityError = APIError.badRequest("toxicity must be a number from 0 to 1")

    static func checkedToxicity(_ toxicity: Double) throws -> Double {
        guard toxicity >= 0, toxicity <= 1 else { throw toxicityError }
        return toxicity
    }

    /// "a latency toxic", "an outage toxic": a type named in a message.
    static func named(_ type: String) -> String {
        ("aeiou".contains(type.first ?? "x") ? "an " : "a ") + "\(type) toxic"
    }

    /// The 400 for an attribute this type does not have, or nil when it has it.
    static func unknownAttribute(_ key: String, type: String) -> APIError? {
        let allowed = types[type] ?? []
        guard !allowed.contains(key) else { return nil }
        return APIError.badRequest("unknown attribute \(key) for \(named(type)) (allowed: \(allowed.joined(separator: ", ")))")
    }

    /// Applies a change: a new toxicity (0 to 1) and/or attributes merged into the current ones.
    /// Nothing changes unless the result is a toxic that works (its ``effect()`` is valid).
    mutating func update(toxicity: Double?, attributes changes: [String: AttributeValue]) throws {
        var candidate = self
        if let toxicity { candidate.toxicity = try Toxic.checkedToxicity(toxicity) }
        for (key, value) in changes {
            if let unknown = Toxic.unknownAttribute(key, type: type) { throw unknown }
            candidate.attributes[key] = value
        }
        try candidate.fillDefaults()
        _ = try candidate.effect()
        self = candidate
    }

    private mutating func fillDefaults() throws {
        if let mapping {
            for attribute in mapping.attributes where attributes[attribute.name] == nil {
                attributes[attribute.name] = Toxic.defaultAttribute(attribute)
            }
            return
        }
        for key in Toxic.types[type] ?? [] where attributes[key] == nil {
            switch (type, key) {
            case ("profile", "name"): throw APIError.badRequest("a profile toxic needs attributes.name, one of \(LinkProfile.all.map(\.name).joined(separator: ", "))")
            default: attributes[key] = .number(0)
            }
        }
    }
}
