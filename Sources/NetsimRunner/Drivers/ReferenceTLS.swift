import NIOConcurrencyHelpers
import NIOSSL
import NetsimCore
import NetsimTLS

/// TLS for the reference clients (`naive`, `resilient`): NIOSSL with full verification against
/// the run's CA (or the system's trust store). Nothing here can turn verification off.
enum ReferenceTLS {
    /// A client context trusting `caFile` (PEM), or the system's roots when nil.
    static func context(caFile: String?) throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        // As URLSession, OkHttp and AsyncHTTPClient: h2 when the server offers it.
        configuration.applicationProtocols = [ApplicationProtocol.http2.rawValue, ApplicationProtocol.http1.rawValue]
        if let caFile { configuration.trustRoots = .file(caFile) }
        return try NIOSSLContext(configuration: configuration)
    }
}

/// A driver's TLS context, made on its first `https://` request and kept.
final class LazyTLSContext: Sendable {
    private let caFile: String?
    private let made = NIOLockedValueBox<NIOSSLContext?>(nil)

    init(caFile: String?) { self.caFile = caFile }

    func get() throws(ExchangeFailure) -> NIOSSLContext {
        do {
            return try made.withLockedValue { context in
                if let context { return context }
                let new = try ReferenceTLS.context(caFile: caFile)
                context = new
                return new
            }
        } catch {
            throw ExchangeFailure(kind: .tls, message: "cannot set up TLS: \(error)", beforeResponse: true)
        }
    }
}
