import NIOSSL
import NetsimTLS

/// How the built-in upstream speaks: plaintext HTTP/1.1 (the default), h2c with prior knowledge,
/// or TLS with HTTP/1.1 and/or h2 chosen by ALPN.
public struct UpstreamTransport: Sendable {
    /// nil: plaintext.
    public var tls: TLSConfiguration?
    /// Over TLS, offered by ALPN in this order (a client that offers no ALPN gets HTTP/1.1 when
    /// it is listed). In plaintext exactly one: `.http1`, or `.http2` for h2c with prior knowledge.
    public var protocols: [ApplicationProtocol]

    public init(tls: TLSConfiguration? = nil, protocols: [ApplicationProtocol] = [.http1]) {
        self.tls = tls
        self.protocols = protocols
    }

    public static let plaintextHTTP1 = UpstreamTransport()

    /// TLS with a leaf from `authority` for whatever name the client asks.
    public static func tls(authority: CertificateAuthority, protocols: [ApplicationProtocol] = [.http2, .http1], keyLog: KeyLogFile? = nil) throws -> UpstreamTransport {
        var configuration = try authority.serverConfiguration(protocols: protocols, keyLog: keyLog?.callback)
        // Closing, do not wait the default 5 s for the client's close_notify: real servers
        // (nginx, Go) close at once, and many clients never send one.
        configuration.shutdownTimeout = .milliseconds(200)
        return UpstreamTransport(tls: configuration, protocols: protocols)
    }
}
