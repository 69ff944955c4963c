import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NetsimCore

/// The forward proxy's stand-in upstream for a destination while an `outage` or `portal` fault
/// may answer in its place: a loopback listener the destination's relay connects to, which
/// resolves and connects the real destination only then. A relay whose stand-in answers never
/// connects upstream, so a portal answers even for a host that does not resolve (no DNS on a
/// portal network, or an OS probe like `captive.apple.com` on an offline machine) and nothing is
/// resolved or connected for it.
///
/// When the destination cannot be reached, a connection whose first bytes look like an HTTP
/// request gets `502 Bad Gateway`; any other is reset (as a refused connect is).
final class UpstreamDialer: @unchecked Sendable {
    let destination: Endpoint
    private let group: any EventLoopGroup
    private let lock = NIOLock()
    private var listener: (any Channel)?

    /// How long an unreachable destination's connection waits for its first bytes before it is reset.
    static let failureGrace: TimeAmount = .seconds(10)

    init(destination: Endpoint, group: any EventLoopGroup) {
        self.destination = destination
        self.group = group
    }

    /// Listens on a free loopback port and returns it.
    func start() async throws -> Endpoint {
        let destination = self.destination
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(ChannelOptions.autoRead, value: false)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(DialHandler(destination: destination))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        lock.withLock { listener = channel }
        return Endpoint(host: "127.0.0.1", port: channel.localAddress?.port ?? 0)
    }

    func stop() async {
        let channel = lock.withLock { () -> (any Channel)? in
            defer { listener = nil }
            return listener
        }
        try? await channel?.close()
    }
}

/// Connects one relay connection to the destination (resolving it only now), then glues the two.
final class DialHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let destination: Endpoint
    /// Why the destination cannot be reached, once the connect failed.
    private var failure: String?
    private var answered = false

    init(destination: Endpoint) { self.destination = destination }

    func channelActive(context: ChannelHandlerContext) {
        context.fireChannelActive()
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        ClientBootstrap(group: context.eventLoop)
            .channelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .connect(host: destination.host, port: destination.port)
            .assumeIsolated()
            .whenComplete { result in
                let (handler, context) = bound.value
                switch result {
                case .success(let outbound): handler.join(context, outbound)
                case .failure(let error): handler.failed(context, error)
                }
            }
    }

    private func join(_ context: ChannelHandlerContext, _ outbound: any Channel) {
        let channel = context.channel
        guard channel.isActive else {
            outbound.close(promise: nil)
            return
        }
        // Both channels are on this event loop (the connect used it).
        let (local, remote) = GlueHandler.matchedPair()
        do {
            try context.pipeline.syncOperations.addHandler(local)
            try outbound.pipeline.syncOperations.addHandler(remote)
            context.pipeline.syncOperations.removeHandler(self, promise: nil)
        } catch {
            channel.close(promise: nil)
            outbound.close(promise: nil)
            return
        }
        _ = channel.setOption(ChannelOptions.autoRead, value: true)
    }

    private func failed(_ context: ChannelHandlerContext, _ error: any Error) {
        let channel = context.channel
        guard channel.isActive else { return }
        if let error = error as? NIOConnectionError, error.connectionErrors.isEmpty {
            failure = "\(destination.host) does not resolve"
        } else {
            failure = "\(error)"
        }
        _ = channel.setOption(ChannelOptions.autoRead, value: true)
        channel.eventLoop.scheduleTask(in: Self.grace) {
            if channel.isActive { GlueHandler.reset(channel) }
        }
    }

    private static var grace: TimeAmount { UpstreamDialer.failureGrace }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let failure, !answered else { return }
        answered = true
        let bytes = unwrapInboundIn(data)
        let first = bytes.getInteger(at: bytes.readerIndex, as: UInt8.self) ?? 0
        guard (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(first) else {
            GlueHandler.reset(context.channel)
            return
        }
        let message = "netsim proxy: cannot reach \(destination): \(failure)\n"
        let text = "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nContent-Length: \(message.utf8.count)\r\nConnection: close\r\n\r\n\(message)"
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(channel.allocator.buffer(string: text))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, case .inputClosed = event, failure != nil, !answered {
            answered = true
            context.close(promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
