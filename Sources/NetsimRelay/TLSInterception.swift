import Foundation
import NIOCore
import NIOSSL
import NetsimTLS

/// How a relay intercepts TLS (`link: { tls: intercept }`, `netsim relay --tls intercept`): it
/// terminates the client's TLS with a leaf from netsim's CA for the name the client asked for,
/// sees the HTTP inside, and opens its own verified TLS to upstream.
///
/// A connection is then two layers (docs/tls.md): the *wire* layer, the client's TCP connection
/// carrying encrypted bytes, where the link model and connection faults act (a handshake costs
/// its round trips); and the *HTTP* layer behind the TLS termination, where requests are
/// observed and request faults (`outage`, `portal`) answer in the server's place.
public struct TLSInterception: Sendable {
    /// What clients are shown: a leaf per SNI from netsim's CA, and by ALPN the protocols asked
    /// (`h2` and `http/1.1` by default: an h2 client is carried as h2 stream by stream).
    public var clientFacing: TLSConfiguration
    /// Towards upstream: verification on, against ``UpstreamTrust``; ALPN `http/1.1` (for a
    /// client that spoke HTTP/1.1).
    public var upstream: TLSConfiguration
    /// The same, with ALPN `h2` (for a client that spoke h2).
    public var upstreamHTTP2: TLSConfiguration
    /// The name upstream's certificate must carry (and the SNI sent); nil: the upstream's host
    /// (an IP address is verified as an IP address, with no SNI).
    public var upstreamServerName: String?
    /// The CA the client-facing leaves come from.
    let authority: CertificateAuthority

    static let closeNotifyWait = TimeAmount.milliseconds(200)

    /// Whom the relay trusts for the upstream's certificate.
    public enum UpstreamTrust: Sendable {
        /// The system's trust store (a real HTTPS server).
        case system
        /// A CA file in PEM (`--upstream-ca FILE`).
        case caFile(String)
        /// netsim's own CA (the built-in TLS upstream of a scenario).
        case authority(CertificateAuthority)
        /// No verification at all (`--upstream-insecure`): said loudly where it is chosen.
        case insecure
    }

    /// - Parameter keyLog: receives the secrets of both sessions (client-facing and upstream), so
    ///   a capture of either leg can be decrypted.
    /// - Parameter protocols: offered to clients by ALPN, in order; list only what upstream speaks
    ///   (an h2 client is carried on an h2 connection to upstream).
    public init(authority: CertificateAuthority, upstreamTrust: UpstreamTrust, upstreamServerName: String? = nil,
                protocols: [ApplicationProtocol] = [.http2, .http1], keyLog: KeyLogFile? = nil) throws {
        self.authority = authority
        clientFacing = try authority.serverConfiguration(protocols: protocols, keyLog: keyLog?.callback)
        // Closing, NIOSSL waits for the peer's close_notify (5 s by default). A real upstream
        // often never answers one: a connection whose TLS is over must not linger for that. The
        // client-facing side closes at once after its own close_notify, as nginx's and Go's
        // servers do: waiting, its FIN reached the client only after the client's own answer
        // (up to 200 ms), and the log showed the client's FIN first (QA 51).
        clientFacing.shutdownTimeout = .zero
        var upstream = TLSConfiguration.makeClientConfiguration()
        upstream.shutdownTimeout = Self.closeNotifyWait
        upstream.applicationProtocols = [ApplicationProtocol.http1.rawValue]
        upstream.keyLogCallback = keyLog?.callback
        switch upstreamTrust {
        case .system:
            break
        case .caFile(let path):
            guard let file = fopen(path, "r") else {
                throw TLSSetupError.cannotRead(path, reason: String(cString: strerror(errno)))
            }
            fclose(file)
            do {
                upstream.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(path))
            } catch {
                throw TLSSetupError.notPEM(path, expected: "one or more PEM certificates")
            }
        case .authority(let authority):
            upstream.trustRoots = .certificates([try NIOSSLCertificate(bytes: try authority.certificate.serializeAsPEM().derBytes, format: .der)])
        case .insecure:
            upstream.certificateVerification = .none
        }
        self.upstream = upstream
        upstream.applicationProtocols = [ApplicationProtocol.http2.rawValue]
        self.upstreamHTTP2 = upstream
        self.upstreamServerName = upstreamServerName
    }

    /// ``clientFacing`` for clients that reached `address`: without SNI they are shown a leaf
    /// that names it too (``ClientFacingContexts``).
    func clientFacing(reaching address: ServerName) throws -> TLSConfiguration {
        try authority.presentingLeaves(in: clientFacing, reaching: address)
    }
}
