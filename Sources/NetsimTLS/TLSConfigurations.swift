import Foundation
import NIOCore
import NIOSSL
@_exported import enum NetsimCore.ApplicationProtocol

extension CertificateAuthority {
    /// A server configuration that presents, for each handshake, a leaf for the name the client
    /// asked for by SNI (or, without SNI, the loopback leaf: 127.0.0.1, ::1, localhost), and
    /// offers `protocols` by ALPN in that order of preference.
    ///
    /// - Parameter keyLog: called with each session's secrets as an SSLKEYLOGFILE line
    ///   (see ``KeyLogFile``).
    public func serverConfiguration(
        protocols: [ApplicationProtocol] = [.http1], keyLog: NIOSSLKeyLogCallback? = nil
    ) throws -> TLSConfiguration {
        // A context needs a certificate of its own; each handshake's is the callback's.
        let first = try leaf(for: nil, now: clock())
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: first.nioChain.map { .certificate($0) },
            privateKey: .privateKey(first.nioPrivateKey))
        configuration.applicationProtocols = protocols.map(\.rawValue)
        configuration.keyLogCallback = keyLog
        return try presentingLeaves(in: configuration, reaching: nil)
    }

    /// `configuration` (one of ``serverConfiguration(protocols:keyLog:)``) presenting to clients
    /// without SNI a leaf that also names `address`, the address they reached (a relay's own
    /// address off loopback, a proxy's `CONNECT 10.1.2.3:443`).
    ///
    /// Every handshake takes its leaf from the cache, which replaces a leaf a day before it ends
    /// (by ``clock``): with SNI and without alike. QA 62: the leaf for clients without SNI was
    /// minted once, with the configuration, and answered ever after — a `netsim relay --tls
    /// intercept` running past its 7 days served an expired certificate to every client that
    /// connected by IP address.
    public func presentingLeaves(in configuration: TLSConfiguration, reaching address: ServerName?) throws -> TLSConfiguration {
        var configuration = configuration
        let first = try leaf(for: nil, reaching: address, now: clock())
        configuration.certificateChain = first.nioChain.map { .certificate($0) }
        configuration.privateKey = .privateKey(first.nioPrivateKey)
        configuration.sslContextCallback = { [self] values, promise in
            do {
                promise.succeed(try leaf(for: Self.serverName(values), reaching: address, now: clock()).configurationOverride)
            } catch {
                promise.fail(error)
            }
        }
        return configuration
    }

    /// The name a client asked for by SNI; nil without one (a client that connects to an address).
    static func serverName(_ values: NIOSSLClientExtensionValues) -> ServerName? {
        guard let name = values.serverHostname, !name.isEmpty else { return nil }
        return ServerName(name)
    }

    /// A client configuration that trusts this CA (and only it): what netsim's own clients use
    /// to reach the built-in TLS upstream.
    public func clientConfiguration(protocols: [ApplicationProtocol] = [.http1], keyLog: NIOSSLKeyLogCallback? = nil) throws -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .certificates([try NIOSSLCertificate(bytes: try certificate.serializeAsPEM().derBytes, format: .der)])
        configuration.applicationProtocols = protocols.map(\.rawValue)
        configuration.keyLogCallback = keyLog
        return configuration
    }
}
