import NIOConcurrencyHelpers
import NIOSSL
import NetsimCore
import NetsimTLS

/// TLS for the reference clients: NIOSSL verifying against the run's CA (or the system's trust
/// store) — `resilient` always; `naive` not at all, on purpose (``CertificateChecks``).
enum ReferenceTLS {
    /// A client context trusting `caFile` (PEM), or the system's roots when nil.
    static func context(caFile: String?, checks: CertificateChecks) throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        if checks == .none { configuration.certificateVerification = .none }
        // As URLSession, OkHttp and AsyncHTTPClient: h2 when the server offers it.
        configuration.applicationProtocols = [ApplicationProtocol.http2.rawValue, ApplicationProtocol.http1.rawValue]
        if let caFile { configuration.trustRoots = .file(caFile) }
        return try NIOSSLContext(configuration: configuration)
    }
}

/// Whether a reference client checks the server's certificate.
enum CertificateChecks: Sendable {
    /// Chain and name, as every client must.
    case full
    /// None: any certificate is taken — what apps do that switched verification off to reach a
    /// development server and shipped it (`naive` reproduces it; `bad-cert` and `portal-tls`
    /// catch it as a security finding).
    case none
}

/// A driver's TLS context, made on its first `https://` request and kept.
final class LazyTLSContext: Sendable {
    private let caFile: String?
    private let checks: CertificateChecks
    private let made = NIOLockedValueBox<NIOSSLContext?>(nil)

    init(caFile: String?, checks: CertificateChecks) {
        self.caFile = caFile
        self.checks = checks
    }

    func get() throws(ExchangeFailure) -> NIOSSLContext {
        do {
            return try made.withLockedValue { context in
                if let context { return context }
                let new = try ReferenceTLS.context(caFile: caFile, checks: checks)
                context = new
                return new
            }
        } catch {
            throw ExchangeFailure(kind: .tls, message: "cannot set up TLS: \(error)", beforeResponse: true)
        }
    }
}
