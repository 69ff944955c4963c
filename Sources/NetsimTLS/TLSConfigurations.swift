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
        let fallback = try leaf(for: nil)
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: fallback.nioChain.map { .certificate($0) },
            privateKey: .privateKey(fallback.nioPrivateKey))
        configuration.applicationProtocols = protocols.map(\.rawValue)
        configuration.keyLogCallback = keyLog
        configuration.sslContextCallback = { [self] values, promise in
            guard let name = values.serverHostname, !name.isEmpty else {
                promise.succeed(.noChanges)
                return
            }
            do { promise.succeed(try leaf(for: ServerName(name)).configurationOverride) } catch { promise.fail(error) }
        }
        return configuration
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
