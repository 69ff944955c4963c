#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One name netsim's resolver answers (`--dns api.test=host`, a scenario's `dns: { names: … }`).
public struct DNSMapping: Equatable, Sendable, CustomStringConvertible {
    /// Where the name points.
    public enum Target: Equatable, Sendable {
        /// The host side (NETSIM_HOST, and NETSIM_HOST6 for AAAA): the only destination a packet
        /// path delivers to, so the usual choice.
        case host
        /// A literal address; a packet path accepts only NETSIM_HOST's own (checked when the
        /// shell knows it).
        case address(String)
    }

    /// Lower-case, without a trailing dot.
    public var name: String
    public var target: Target

    public init(name: String, target: Target) {
        self.name = name
        self.target = target
    }

    public static let allowedForms = "NAME=host (NETSIM_HOST) or NAME=ADDRESS, e.g. api.test=host"

    /// `NAME=host` or `NAME=ADDRESS`.
    public init(parsing text: String) throws {
        guard let equals = text.firstIndex(of: "=") else {
            throw UnitParseError(input: text, expected: "a NAME=TARGET pair", allowedForms: Self.allowedForms)
        }
        let name = String(text[..<equals]), value = String(text[text.index(after: equals)...])
        guard !value.isEmpty else {
            throw UnitParseError(input: text, expected: "an address or `host` after =", allowedForms: Self.allowedForms)
        }
        try self.init(name: name, value: value)
    }

    /// A name and `host` or an address, as a scenario's `names:` mapping holds them.
    public init(name: String, value: String) throws {
        guard let normalized = Self.normalized(name) else {
            throw UnitParseError(input: name, expected: "a domain name (labels of letters, digits, - and _, each at most 63 bytes, 253 in all; `*.` first for every name below)",
                                 allowedForms: Self.allowedForms)
        }
        let target: Target = value.lowercased() == "host" ? .host : .address(value)
        if case .address(let text) = target, Self.addressBytes(text) == nil {
            throw UnitParseError(input: value, expected: "`host` or an IPv4/IPv6 address", allowedForms: Self.allowedForms)
        }
        self.init(name: normalized, target: target)
    }

    /// The name lower-cased without its trailing dot; nil when it is not a valid domain name.
    public static func normalized(_ name: String) -> String? {
        let trimmed = (name.hasSuffix(".") ? String(name.dropLast()) : name).lowercased()
        let labels = trimmed.split(separator: ".", omittingEmptySubsequences: false)
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789-_")
        // `*` only as the whole first label: a wildcard for every name below the rest.
        guard !trimmed.isEmpty, trimmed.utf8.count <= 253, trimmed != "*",
              labels.enumerated().allSatisfy({ index, label in
                  (index == 0 && label == "*") || (!label.isEmpty && label.utf8.count <= 63 && label.allSatisfy(allowed.contains))
              }) else { return nil }
        return trimmed
    }

    /// The 4 or 16 bytes of an IPv4 or IPv6 address in text (inet_pton); nil for anything else.
    public static func addressBytes(_ text: String) -> [UInt8]? {
        var v4 = [UInt8](repeating: 0, count: 4), v6 = [UInt8](repeating: 0, count: 16)
        if inet_pton(AF_INET, text, &v4) == 1 { return v4 }
        if inet_pton(AF_INET6, text, &v6) == 1 { return v6 }
        return nil
    }

    /// `api.test=host`
    public var description: String {
        switch target {
        case .host: "\(name)=host"
        case .address(let address): "\(name)=\(address)"
        }
    }
}
