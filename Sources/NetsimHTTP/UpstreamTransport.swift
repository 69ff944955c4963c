import NetsimCore
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
    /// The CA behind `tls`'s leaves: a server listening off loopback (a packet link's host side)
    /// names its address in the leaf for clients without SNI (``tls(reaching:)``).
    public var authority: CertificateAuthority?

    public init(tls: TLSConfiguration? = nil, protocols: [ApplicationProtocol] = [.http1], authority: CertificateAuthority? = nil) {
        self.tls = tls
        self.protocols = protocols
        self.authority = authority
    }

    /// `tls` for a server listening on `host`: off loopback its leaf for a client without SNI
    /// (one that connects by address) names `host` too. It named loopback only, so a packet
    /// link's client, reaching the server at the link's host address, could not verify it (QA 62).
    public func tls(reaching host: String) throws -> TLSConfiguration? {
        guard let tls, let authority, !Endpoint.isWildcard(host), let address = ServerName.address(host),
              !ServerName.loopback.contains(address) else { return tls }
        return try authority.presentingLeaves(in: tls, reaching: address)
    }

    public static let plaintextHTTP1 = UpstreamTransport()

    /// TLS with a leaf from `authority` for whatever name the client asks.
    public static func tls(authority: CertificateAuthority, protocols: [ApplicationProtocol] = [.http2, .http1], keyLog: KeyLogFile? = nil) throws -> UpstreamTransport {
        var configuration = try authority.serverConfiguration(protocols: protocols, keyLog: keyLog?.callback)
        // Closing, do not wait the default 5 s for the client's close_notify: real servers
        // (nginx, Go) close at once, and many clients never send one.
        configuration.shutdownTimeout = .milliseconds(200)
        return UpstreamTransport(tls: configuration, protocols: protocols, authority: authority)
    }
}
