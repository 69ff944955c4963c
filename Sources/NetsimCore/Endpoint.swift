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
        self.init(host: String(host), port: port)
    }

    /// True for addresses that only this machine can reach: `localhost`, 127.0.0.0/8, `::1` in
    /// any spelling, and 127.x mapped into IPv6 (`::ffff:127.0.0.1`, which was warned about as
    /// open to the network).
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
