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
    /// What clients are shown: a leaf per SNI from netsim's CA, ALPN `http/1.1`.
    public var clientFacing: TLSConfiguration
    /// Towards upstream: verification on, against ``UpstreamTrust``.
    public var upstream: TLSConfiguration
    /// The name upstream's certificate must carry (and the SNI sent); nil: the upstream's host
    /// (an IP address is verified as an IP address, with no SNI).
    public var upstreamServerName: String?

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
    public init(authority: CertificateAuthority, upstreamTrust: UpstreamTrust, upstreamServerName: String? = nil,
                keyLog: KeyLogFile? = nil) throws {
        clientFacing = try authority.serverConfiguration(protocols: [.http1], keyLog: keyLog?.callback)
        var upstream = TLSConfiguration.makeClientConfiguration()
        upstream.applicationProtocols = [ApplicationProtocol.http1.rawValue]
        upstream.keyLogCallback = keyLog?.callback
        switch upstreamTrust {
        case .system:
            break
        case .caFile(let path):
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
        self.upstreamServerName = upstreamServerName
    }
}
