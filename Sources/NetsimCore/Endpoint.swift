#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A host and port as written on a command line: `127.0.0.1:8080`, `[::1]:8080`, `localhost:80`.
public struct Endpoint: Hashable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    public static let allowedForms = "HOST:PORT, e.g. 127.0.0.1:8080, localhost:80 or [::1]:8080"

    public init(parsing text: String) throws {
        let error = UnitParseError(input: text, expected: "an address", allowedForms: Endpoint.allowedForms)
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"),
                  text.index(after: close) < text.endIndex, text[text.index(after: close)] == ":" else { throw error }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else { throw error }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        guard !host.isEmpty, let port = Int(portText), (0...65535).contains(port) else { throw error }
        let canonical = Self.canonicalIPv4(String(host)) ?? String(host)
        // A host that no resolver could take failed only when connecting, as "does not resolve",
        // with no place in the scenario named (QA 61: `host name:80`, `1.2.3.4.5:80`).
        if let problem = Self.hostProblem(canonical, bracketed: text.hasPrefix("[")) {
            throw UnitParseError(input: text, expected: "an address (\(problem))", allowedForms: Endpoint.allowedForms)
        }
        self.init(host: canonical, port: port)
    }

    /// Why `host` is neither an IP address nor a host name; nil when it is one. A name is labels
    /// of letters, digits, `-` and `_` (1 to 63 each, 253 in all) between dots, its last not all
    /// digits (that would be an IPv4 address, and is not one). In brackets, only IPv6.
    public static func hostProblem(_ host: String, bracketed: Bool) -> String? {
        // A zone (`fe80::1%eth0`) follows a link-local IPv6 address.
        let address = DNSMapping.addressBytes(bracketed ? String(host.prefix { $0 != "%" }) : host)
        if bracketed { return address?.count == 16 ? nil : "'\(host)' in brackets is not an IPv6 address" }
        if address != nil { return nil }
        let name = host.hasSuffix(".") ? host.dropLast() : Substring(host)
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
        if let bad = host.first(where: { !allowed.contains($0) && $0 != "." }) {
            return "'\(host)' is not a host name: \(bad == " " ? "a space" : "'\(bad)'") cannot be in one"
        }
        guard name.count <= 253, labels.allSatisfy({ !$0.isEmpty && $0.count <= 63 }) else {
            return "'\(host)' is not a host name: labels of 1 to 63 characters between single dots"
        }
        if labels.last?.allSatisfy(\.isNumber) == true { return "'\(host)' is not an IPv4 address" }
        return nil
    }

    /// `127.1`, `2130706433`, `0x7f000001`, `127.000.000.001`: the shorthand IPv4 forms the
    /// socket layer takes (inet_aton's) as the dotted quad they mean, so that the loopback check
    /// and the logs see the address bound (QA 49: `--listen 127.1:0` bound 127.0.0.1 and was
    /// warned about as not loopback). Nil for a dotted quad already, an IPv6 address or a name.
    public static func canonicalIPv4(_ host: String) -> String? {
        guard DNSMapping.addressBytes(host) == nil, host.first?.isNumber == true else { return nil }
        var address = in_addr()
        guard inet_aton(host, &address) != 0 else { return nil }
        return withUnsafeBytes(of: address.s_addr) { $0.map(String.init).joined(separator: ".") }  // network order
    }

    /// True for addresses that only this machine can reach: `localhost`, 127.0.0.0/8, `::1` in
    /// any spelling, and 127.x mapped into IPv6 (`::ffff:127.0.0.1`, which was warned about as
    /// open to the network).
    public var isWildcard: Bool { Self.isWildcard(host) }

    /// True for the addresses that mean "every interface" (`0.0.0.0`, `::` in any spelling): a
    /// listener's, never one a client reaches.
    public static func isWildcard(_ host: String) -> Bool {
        DNSMapping.addressBytes(host)?.allSatisfy { $0 == 0 } ?? false
    }

    public var isLoopback: Bool {
        if host.lowercased() == "localhost" { return true }
        guard let bytes = DNSMapping.addressBytes(host) else { return false }
        if bytes.count == 4 { return bytes[0] == 127 }
        let loopback6 = bytes[0..<15].allSatisfy { $0 == 0 } && bytes[15] == 1
        let mapped = bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
        return loopback6 || mapped && bytes[12] == 127
    }

    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
