import NetsimCore
import NetsimRelay

/// The toxics that are faults come from the fault catalog (each fault's ``ToxicMapping``): their
/// types, attributes, defaults and the fault rules they add. Only the link toxics (latency,
/// bandwidth, slicer, loss, profile) are spelled here in the service.
///
/// A `choice` attribute is a JSON string from a fixed set, its first value the default
/// (`outage`'s `kind`: `503`, …; `portal`'s `answer` and `tls`); numbers are whole milliseconds or
/// bytes, 0 by default.
extension Toxic {
    /// The link toxics' types and attributes.
    static let linkTypes: [String: [String]] = [
        "latency": ["latency", "jitter"],
        "bandwidth": ["rate"],
        "slicer": ["average_size", "size_variation", "delay"],
        "loss": ["percent"],
        "profile": ["name"],
    ]

    /// The fault toxic of this type, if it is one.
    var mapping: ToxicMapping? { FaultCatalog.toxic(type) }

    /// The allowed values of a string attribute (nil: not a string attribute).
    static func choices(type: String, key: String) -> [String]? {
        guard case .choice(let values)? = FaultCatalog.toxic(type)?.attributes.first(where: { $0.name == key })?.kind else { return nil }
        return values
    }

    private static func quoted(_ values: [String]) -> String { values.map { "\"\($0)\"" }.joined(separator: ", ") }

    /// The 400 for a string attribute that is not a JSON string; `got` says what it was instead
    /// ("the number 5", "null", "an array"…).
    static func choiceTypeError(type: String, key: String, got: String) -> APIError {
        APIError.badRequest("attribute \(key) of \(named(type)) must be a JSON string, one of \(quoted(choices(type: type, key: key) ?? [])) (got \(got))")
    }

    /// True when the toxic's relay answers requests itself (`outage`, `portal`): changing one in
    /// place must never let a request through to the upstream in between.
    var isStandIn: Bool {
        guard case .faults(let steps)? = try? effect() else { return false }
        return steps.contains { step in
            switch step {
            case .now(let kind), .after(let kind, _): kind.scope == .request
            }
        }
    }

    /// Default values of a fault toxic's attributes.
    static func defaultAttribute(_ attribute: ToxicMapping.Attribute) -> AttributeValue {
        switch attribute.kind {
        case .milliseconds, .bytes: .number(0)
        case .choice(let values): .string(values.first ?? "")
        }
    }

    /// The catalog's steps for this toxic, its attributes checked against the mapping.
    func faultSteps(_ mapping: ToxicMapping, count: (String, String) throws -> Int64) throws -> [ToxicMapping.Step] {
        var arguments = ToxicMapping.Arguments(stream: stream.direction)
        for attribute in mapping.attributes {
            switch attribute.kind {
            case .milliseconds: arguments.numbers[attribute.name] = try count(attribute.name, "milliseconds")
            case .bytes: arguments.numbers[attribute.name] = try count(attribute.name, "bytes")
            case .choice(let values):
                guard case .string(let text)? = attributes[attribute.name] else {
                    throw APIError.badRequest("attribute \(attribute.name) of \(Self.named(type)) must be a JSON string, one of \(Self.quoted(values))")
                }
                guard values.contains(text) else {
                    throw APIError.badRequest("attribute \(attribute.name) of \(Self.named(type)) must be one of \(Self.quoted(values)), not \"\(text)\"")
                }
                arguments.strings[attribute.name] = text
            }
        }
        do {
            return try mapping.steps(arguments)
        } catch {
            throw APIError.badRequest(error.message)
        }
    }
}
