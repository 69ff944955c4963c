/// Any JSON value, as it was sent.
///
/// The API's request types decode each field as the type Toxiproxy expects; a field of another
/// JSON type is kept as a `JSONValue`, so the 400 can say what came instead ("got the number 5")
/// and so `true` is never taken for 1 (Toxiproxy's Go decoder keeps them apart too).
enum JSONValue: Codable, Equatable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let text = try? container.decode(String.self) {
            self = .string(text)
        } else if let items = try? container.decode([JSONValue].self) {
            self = .array(items)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let flag): try container.encode(flag)
        case .number(let number): try container.encode(number)
        case .string(let text): try container.encode(text)
        case .array(let items): try container.encode(items)
        case .object(let members): try container.encode(members)
        }
    }

    /// An array or an object: what a request body must be (a bare `5` or `"x"` is refused as
    /// malformed, as Toxiproxy's clients never send one).
    var isContainer: Bool {
        switch self {
        case .array, .object: true
        default: false
        }
    }

    /// The value as an error message names it: `null`, `true`, `the number 5`, `the string "x"`,
    /// `an array`, `an object`.
    var shown: String {
        switch self {
        case .null: "null"
        case .bool(let flag): "\(flag)"
        case .number(let number): "the number \(JSONNumberText.shortest(number))"
        case .string(let text): "the string \"\(text)\""
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// How the API writes a number in text: whole numbers without a fraction (`5`, not `5.0`), as
/// JSON shows them.
enum JSONNumberText {
    static func shortest(_ number: Double) -> String {
        isWhole(number) ? String(Int64(number)) : "\(number)"
    }

    /// Whole and small enough to be written as an integer exactly.
    static func isWhole(_ number: Double) -> Bool {
        number == number.rounded() && abs(number) < 1e15
    }
}
