import Foundation
import NIOCore
import X509
import SwiftASN1
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A name a client asks a TLS server for: a DNS name (from SNI or the URL's host) or an IP
/// address (clients send no SNI for those), as it goes into a certificate's subjectAltName.
public enum ServerName: Hashable, Sendable, CustomStringConvertible {
    case dns(String)
    /// Network-order bytes: 4 for IPv4, 16 for IPv6.
    case ip([UInt8])

    /// The names every netsim leaf also carries, so a loopback client reaches it by any of them.
    public static let loopback: [ServerName] = [.dns("localhost"), .ip([127, 0, 0, 1]), .ip(Array(repeating: 0, count: 15) + [1])]

    /// Parses `127.0.0.1`, `::1`, `[::1]` as addresses and anything else as a DNS name
    /// (lowercased, trailing dot dropped: names compare case-insensitively).
    public init(_ text: String) {
        var host = text
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if let bytes = ServerName.addressBytes(host, family: AF_INET, count: 4) {
            self = .ip(bytes)
        } else if let bytes = ServerName.addressBytes(host, family: AF_INET6, count: 16) {
            self = .ip(bytes)
        } else {
            var name = host.lowercased()
            if name.hasSuffix(".") { name.removeLast() }
            self = .dns(name)
        }
    }

    /// The address `text` is (`10.1.2.3`, `::1`, `[::1]`); nil for a name.
    public static func address(_ text: String) -> ServerName? {
        if case .ip = ServerName(text) { return ServerName(text) }
        return nil
    }

    /// The IP address of a socket's end, as a client that reached it verifies it: an IPv4 client
    /// of a dual-stack socket reached `10.0.2.2`, not `::ffff:10.0.2.2`. nil for a Unix socket.
    public init?(reached socket: SocketAddress) {
        guard let text = socket.ipAddress, case .ip(let bytes) = ServerName(text) else { return nil }
        let mappedPrefix: [UInt8] = Array(repeating: 0, count: 10) + [0xFF, 0xFF]
        self = .ip(bytes.count == 16 && Array(bytes.prefix(12)) == mappedPrefix ? Array(bytes.suffix(4)) : bytes)
    }

    /// What a client sends as SNI and verifies the certificate against by name: the DNS name;
    /// nil for an address (SNI carries no addresses; the certificate is checked for the IP).
    public var sni: String? {
        if case .dns(let name) = self { return name }
        return nil
    }

    /// The SNI for the host of `host:port` (or `[v6]:port`), by ``sni``.
    public static func sni(forEndpoint text: String) -> String? {
        let host = text.hasPrefix("[") ? String(text.dropFirst().prefix { $0 != "]" }) : String(text.prefix { $0 != ":" })
        return host.isEmpty ? nil : ServerName(host).sni
    }

    public var description: String {
        switch self {
        case .dns(let name): return name
        case .ip(let bytes): return ServerName.addressText(bytes)
        }
    }

    var generalName: GeneralName {
        switch self {
        case .dns(let name): return .dnsName(name)
        case .ip(let bytes): return .ipAddress(ASN1OctetString(contentBytes: bytes[...]))
        }
    }

    private static func addressBytes(_ text: String, family: Int32, count: Int) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 16)
        let parsed = buffer.withUnsafeMutableBytes { inet_pton(family, text, $0.baseAddress) }
        return parsed == 1 ? Array(buffer.prefix(count)) : nil
    }

    private static func addressText(_ bytes: [UInt8]) -> String {
        var text = [CChar](repeating: 0, count: 64)
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        let ok = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &text, socklen_t(text.count)) }
        guard ok != nil else { return bytes.map(String.init).joined(separator: ".") }
        return String(decoding: text.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
