import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import X509

/// A TLS server on loopback with one context for its whole life, as a relay's is, and the leaf it
/// presents to a client that sends no SNI (one that connects to an IP address).
final class PresentedLeaf: Sendable {
    let context: NIOSSLContext
    let server: any Channel

    init(_ configuration: TLSConfiguration) async throws {
        let context = try NIOSSLContext(configuration: configuration)
        self.context = context
        server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context)) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    /// One handshake without SNI: the leaf the server presented (taken as it is, verified or not).
    func leafWithoutSNI() async throws -> Certificate {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = .noHostnameVerification
        let clientContext = try NIOSSLContext(configuration: configuration)
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let presented = loop.makePromise(of: [UInt8].self)
        let client = try await ClientBootstrap(group: loop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = try NIOSSLClientHandler(context: clientContext, serverHostname: nil) { chain, verdict in
                        presented.completeWith(Result { try chain[0].toDERBytes() })
                        verdict.succeed(.certificateVerified)
                    }
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
            .connect(to: server.localAddress!).get()
        defer { client.close(promise: nil) }
        return try Certificate(derEncoded: try await presented.futureResult.get())
    }

    func close() async {
        try? await server.close()
    }
}

/// A clock a test moves by hand.
final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date

    init(_ start: Date = Date()) { current = start }

    var now: Date { lock.withLock { current } }

    func advance(by interval: TimeInterval) { lock.withLock { current += interval } }
}
