import Foundation
import NetsimRoutes

/// `body:` — what an answer's body must be.
public enum BodyCheck: Equatable, Sendable {
    case equals(String)
    case contains(String)
    /// An answer whose body lacks the text: the error page that must not be shown again. A
    /// request that failed has no body and does not pass.
    case notContains(String)
    /// Lower-case hex SHA-256 of the whole body.
    case sha256(String)
}

/// One entry of `headers:` — a response header, by name (any case), and what it must be.
public struct HeaderCheck: Equatable, Sendable {
    public enum Expectation: Equatable, Sendable {
        /// The value, exactly (repeated headers joined with `, `, as clients report them).
        case equals(String)
        case contains(String)
        /// `{ present: true }` any value; `{ present: false }` no such header.
        case present(Bool)
    }

    public var name: String
    public var expectation: Expectation

    public init(name: String, _ expectation: Expectation) {
        self.name = name
        self.expectation = expectation
    }

    /// Whether `headers` (name and value pairs, names in any case) satisfy this.
    public func holds(in headers: [HTTPHeader]) -> Bool {
        let value = Self.value(of: name, in: headers)
        switch expectation {
        case .equals(let expected): return value == Self.trimmed(expected)
        case .contains(let text): return value?.contains(text) == true
        case .present(let wanted): return (value != nil) == wanted
        }
    }

    /// The header's value, its repeats joined with `, `; nil when there is none. Spaces and tabs
    /// around a value are not part of it (RFC 9110 §5.5); some clients keep trailing ones, others
    /// trim them, and a check must judge every client alike.
    public static func value(of name: String, in headers: [HTTPHeader]) -> String? {
        let values = headers.filter { $0.name.lowercased() == name.lowercased() }.map { trimmed($0.value) }
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }

    static func trimmed(_ value: String) -> String { value.trimmingCharacters(in: Self.spaceAndTab) }

    private static let spaceAndTab = CharacterSet(charactersIn: " \t")
}
