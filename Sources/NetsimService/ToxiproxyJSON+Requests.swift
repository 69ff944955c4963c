// The bodies the API takes. Each field is decoded as the JSON type Toxiproxy expects, and the
// checks that turn a field into a proxy or a toxic keep Toxiproxy's order (the first problem
// found is the one reported): a field of another type is refused with a 400 that names it, as
// Toxiproxy refuses a body Go's decoder cannot read (QA 59: `"name": 1` was "missing required
// field: name").

/// One member of a request object as it was sent.
enum RequestField<Value: Decodable & Sendable>: Decodable, Sendable {
    case absent
    case null
    case value(Value)
    /// Present, with another JSON type (kept for the error message).
    case other(JSONValue)

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Value.self) {
            self = .value(value)
        } else {
            self = .other(try container.decode(JSONValue.self))
        }
    }

    /// The value when it has the expected type; nil when absent, null or of another type.
    var typedValue: Value? {
        if case .value(let value) = self { return value }
        return nil
    }
}

extension KeyedDecodingContainer {
    /// The member `key`, telling an absent member from `null`.
    func field<Value>(_ type: Value.Type, _ key: Key) throws -> RequestField<Value> {
        contains(key) ? try decode(RequestField<Value>.self, forKey: key) : .absent
    }
}

// MARK: Proxies

/// A proxy in `POST /proxies`, `POST /proxies/{name}` (an update) or `POST /populate`.
struct ProxyRequest: Decodable, Sendable {
    /// Each text field: a non-empty string, or nil (absent, null or empty).
    var name: String?
    var listen: String?
    var upstream: String?
    var enabled: RequestField<Bool>
    /// The first text field sent with another JSON type, if any (``checkTypes()``).
    private var mistyped: String?

    private enum CodingKeys: String, CodingKey { case name, listen, upstream, enabled }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        var mistyped: String?
        func text(_ key: CodingKeys) throws -> String? {
            let field = try container.field(String.self, key)
            if case .other = field, mistyped == nil { mistyped = key.stringValue }
            return field.typedValue.flatMap { $0.isEmpty ? nil : $0 }
        }
        name = try text(.name)
        listen = try text(.listen)
        upstream = try text(.upstream)
        enabled = try container.field(Bool.self, .enabled)
        self.mistyped = mistyped
    }

    /// Throws a 400 naming the first text field of another JSON type.
    func checkTypes() throws {
        guard let mistyped else { return }
        let example = ["name": "\"redis\"", "listen": "\"127.0.0.1:26379\"", "upstream": "\"127.0.0.1:6379\""][mistyped] ?? "a string"
        throw APIError.badRequest("\(mistyped) must be a string, e.g. \(example)")
    }

    /// `enabled`, or `current` when it is absent or null.
    func enabled(otherwise current: Bool) throws -> Bool {
        switch enabled {
        case .absent, .null: return current
        case .value(let flag): return flag
        case .other: throw APIError.badRequest("enabled must be true or false")
        }
    }
}

// MARK: Toxics

/// A toxic in `POST /proxies/{proxy}/toxics` (a new one) or `POST /proxies/{proxy}/toxics/{name}`
/// (an update: only `toxicity` and `attributes` count).
struct ToxicRequest: Decodable, Sendable {
    var name: RequestField<String>
    var type: RequestField<String>
    var stream: RequestField<String>
    var toxicity: RequestField<Double>
    var attributes: RequestField<[String: JSONValue]>

    private enum CodingKeys: String, CodingKey { case name, type, stream, toxicity, attributes }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.field(String.self, .name)
        type = try container.field(String.self, .type)
        stream = try container.field(String.self, .stream)
        toxicity = try container.field(Double.self, .toxicity)
        attributes = try container.field([String: JSONValue].self, .attributes)
    }

    /// The toxic this request creates; every problem is a 400 saying what to send.
    func newToxic() throws -> Toxic {
        guard let type = type.typedValue else {
            if case .other = type { throw APIError.badRequest("toxic type must be a string, e.g. \"latency\"") }
            throw APIError.badRequest("missing required field: type")
        }
        try Toxic.checkKnown(type: type)
        var toxic = try Toxic(name: try givenName(), type: type, stream: try givenStream())
        try update(&toxic)
        return toxic
    }

    /// Applies `toxicity` and `attributes` (merged into the toxic's own) to `toxic`.
    func update(_ toxic: inout Toxic) throws {
        let toxicity: Double?
        switch self.toxicity {
        case .absent, .null: toxicity = nil
        case .value(let value): toxicity = try Toxic.checkedToxicity(value)
        case .other: throw Toxic.toxicityError
        }
        try toxic.update(toxicity: toxicity, attributes: try givenAttributes(for: toxic.type))
    }

    /// Absent, null and `""` mean downstream, Toxiproxy's default; `UPSTREAM` is `upstream`.
    private func givenStream() throws -> ToxicStream {
        switch stream {
        case .absent, .null, .value(""): return .downstream
        case .value(let text):
            guard let stream = ToxicStream(rawValue: text.lowercased()) else {  // any case, as Toxiproxy reads it
                throw APIError.badRequest("toxic stream must be upstream or downstream, not \(text)")
            }
            return stream
        case .other: throw APIError.badRequest("toxic stream must be the string upstream or downstream")
        }
    }

    /// nil (the default name) when absent or `""`; `null` is not a name.
    private func givenName() throws -> String? {
        switch name {
        case .absent, .value(""): return nil
        case .value(let text): return text
        case .null, .other: throw APIError.badRequest("toxic name must be a string")
        }
    }

    /// Each attribute checked against the type: known to it, and a number or a string (only a
    /// string for the stand-in toxics). Checked in key order, so the first problem is reported.
    private func givenAttributes(for type: String) throws -> [String: Toxic.AttributeValue] {
        switch attributes {
        case .absent, .null: return [:]
        case .other: throw APIError.badRequest("attributes must be a JSON object")
        case .value(let members):
            var result: [String: Toxic.AttributeValue] = [:]
            for (key, value) in members.sorted(by: { $0.key < $1.key }) {
                if let unknown = Toxic.unknownAttribute(key, type: type) { throw unknown }
                result[key] = try Self.attribute(value, key: key, type: type)
            }
            return result
        }
    }

    private static func attribute(_ value: JSONValue, key: String, type: String) throws -> Toxic.AttributeValue {
        switch value {
        case .string(let text): return .string(text)
        case .number(let number) where Toxic.choices(type: type, key: key) == nil: return .number(number)
        default:
            if Toxic.choices(type: type, key: key) != nil { throw Toxic.choiceTypeError(type: type, key: key, got: value.shown) }
            throw APIError.badRequest("attribute \(key) must be a number or a string")
        }
    }
}
