#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore

/// Addresses as text and as bytes, with the C library's own conversions (inet_ntop/inet_pton) so
/// IPv6 is written the standard compressed way.
public enum IPAddressText {
    public static func format(_ address: [UInt8]) -> String {
        let family = address.count == 16 ? AF_INET6 : AF_INET
        var text = [CChar](repeating: 0, count: 64)
        let ok = address.withUnsafeBytes { raw in
            inet_ntop(family, raw.baseAddress, &text, socklen_t(text.count)) != nil
        }
        guard ok else { return address.map(String.init).joined(separator: ".") }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Parses an IPv4 or IPv6 literal (brackets allowed); nil for anything else.
    public static func parse(_ text: String) -> [UInt8]? {
        var literal = text
        if literal.hasPrefix("["), literal.hasSuffix("]") { literal = String(literal.dropFirst().dropLast()) }
        var v4 = [UInt8](repeating: 0, count: 4)
        if inet_pton(AF_INET, literal, &v4) == 1 { return v4 }
        var v6 = [UInt8](repeating: 0, count: 16)
        if inet_pton(AF_INET6, literal, &v6) == 1 { return v6 }
        return nil
    }

    /// The address bytes and port of a NIO socket address; nil for Unix sockets.
    public static func endpoint(_ address: SocketAddress?) -> PacketEndpoint? {
        guard let address, let ip = address.ipAddress, let port = address.port, let bytes = parse(ip) else { return nil }
        return PacketEndpoint(address: bytes, port: UInt16(truncatingIfNeeded: port))
    }
}
