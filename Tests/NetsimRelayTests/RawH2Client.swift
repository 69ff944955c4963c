import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import NetsimCore
import NetsimLoopback
import NetsimTLS

/// An h2 client that writes raw frames over TLS (ALPN h2) and reads the server's frames: for the
/// orders and timings a real client library never produces (streams before the SETTINGS, a
/// stream after a GOAWAY).
final class RawH2Client: Sendable {
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let channel: any Channel
    private let received = NIOLockedValueBox<[UInt8]>([])
    /// The frames awaited, and the promise that says they came.
    private let waiter = NIOLockedValueBox<(@Sendable ([HTTP2Frames.Frame]) -> Bool, EventLoopPromise<Void>)?>(nil)

    /// Connects, completes TLS, and sends the connection preface and an empty SETTINGS.
    init(_ endpoint: Endpoint, authority: CertificateAuthority) async throws {
        let context = try NIOSSLContext(configuration: try authority.clientConfiguration(protocols: [.http2]))
        let (received, waiter) = (self.received, self.waiter)
        do {
            channel = try await ClientBootstrap(group: group).channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: context, serverHostname: "localhost"))
                    try channel.pipeline.syncOperations.addHandler(ByteCollector { bytes in
                        let frames = HTTP2Frames.parse(received.withLockedValue { $0 += bytes; return $0 })
                        waiter.withLockedValue { awaited in
                            guard let (until, promise) = awaited, until(frames) else { return }
                            awaited = nil
                            promise.succeed(())
                        }
                    })
                }
            }.connect(host: endpoint.host, port: endpoint.port).get()
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        try await send(Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + [0, 0, 0, 4, 0, 0, 0, 0, 0])
    }

    func send(_ bytes: [UInt8]) async throws {
        try await channel.writeAndFlush(channel.allocator.buffer(bytes: bytes))
    }

    /// The server's frames so far.
    var frames: [HTTP2Frames.Frame] { HTTP2Frames.parse(received.withLockedValue { $0 }) }

    /// Waits until the server's frames satisfy `until` (at most `timeout`); the frames then.
    @discardableResult
    func wait(timeout: Duration = .seconds(20), until: @escaping @Sendable ([HTTP2Frames.Frame]) -> Bool) async -> [HTTP2Frames.Frame] {
        let promise = group.next().makePromise(of: Void.self)
        waiter.withLockedValue { $0 = (until, promise) }
        if until(frames), let (_, promise) = waiter.withLockedValue({ $0.take() }) { promise.succeed(()) }
        let waiter = self.waiter
        let deadline = group.next().scheduleTask(in: .nanoseconds(timeout.nanoseconds)) {
            waiter.withLockedValue { $0.take() }?.1.fail(ChannelError.connectTimeout(.nanoseconds(timeout.nanoseconds)))
        }
        try? await promise.futureResult.get()
        deadline.cancel()
        return frames
    }

    func close() async {
        try? await channel.close()
        try? await group.shutdownGracefully()
    }

    /// HEADERS (END_STREAM, END_HEADERS) for `GET https://localhost<path>` on `stream`, in HPACK
    /// literals.
    static func get(_ path: String, stream: UInt8) -> [UInt8] {
        let block: [UInt8] = [0x82, 0x87] + [0x04, UInt8(path.utf8.count)] + Array(path.utf8) + [0x01, 9] + Array("localhost".utf8)
        return [0, 0, UInt8(block.count), 1, 0x05, 0, 0, 0, stream] + block
    }
}

/// Hands every byte read to `received`.
final class ByteCollector: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let received: @Sendable ([UInt8]) -> Void
    init(_ received: @escaping @Sendable ([UInt8]) -> Void) { self.received = received }
    func channelRead(context: ChannelHandlerContext, data: NIOAny) { received(Array(unwrapInboundIn(data).readableBytesView)) }
}
