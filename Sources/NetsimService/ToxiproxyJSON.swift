// The bodies the API sends, as Toxiproxy writes them (keys sorted, whole numbers without a
// fraction). Tests decode them with the same types. What requests may send is in
// ToxiproxyJSON+Requests.swift.

/// A proxy: `{"enabled", "listen", "name", "toxics", "upstream"}`.
struct ProxyJSON: Codable, Equatable, Sendable {
    var name: String
    /// The address it listens on (the real port once started; as given while disabled).
    var listen: String
    var upstream: String
    var enabled: Bool
    /// In the order they were added.
    var toxics: [ToxicJSON]
}

/// A toxic: `{"attributes", "name", "stream", "toxicity", "type"}`.
struct ToxicJSON: Codable, Equatable, Sendable {
    var name: String
    var type: String
    /// `upstream` or `downstream`.
    var stream: String
    var toxicity: Double
    var attributes: [String: Toxic.AttributeValue]

    init(_ toxic: Toxic) {
        name = toxic.name
        type = toxic.type
        stream = toxic.stream.rawValue
        toxicity = toxic.toxicity
        attributes = toxic.attributes
    }
}

/// Every refusal: `{"error": message, "status": status}`; a failed populate adds the proxies it
/// had already made (`"proxies"`), as Toxiproxy does.
struct ErrorJSON: Codable, Equatable, Sendable {
    var error: String
    var status: Int
    var proxies: [ProxyJSON]?

    init(_ error: APIError, proxies: [ProxyJSON]? = nil) {
        self.error = error.message
        self.status = error.status
        self.proxies = proxies
    }
}

/// `GET /version`.
struct VersionJSON: Codable, Equatable, Sendable {
    var version: String
}

/// A successful `POST /populate`: the proxies as they now are, in the order given.
struct PopulateJSON: Codable, Equatable, Sendable {
    var proxies: [ProxyJSON]
}

/// A number or a string in JSON; a whole number is written without a fraction (`100`, not
/// `100.0`), as Toxiproxy's integer attributes are.
extension Toxic.AttributeValue: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else {
            self = .string(try container.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .number(let number) where JSONNumberText.isWhole(number): try container.encode(Int64(number))
        case .number(let number): try container.encode(number)
        case .string(let text): try container.encode(text)
        }
    }
}
