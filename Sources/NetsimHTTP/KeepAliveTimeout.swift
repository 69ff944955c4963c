import NIOCore
import NIOHTTP1

/// Closes a keep-alive connection that has been idle for `timeout`, the way a real server's
/// keep-alive timeout does: a plain close (FIN), with no response, while no request is in progress.
///
/// "Idle" starts when the connection opens (when it would have opened on the simulated link:
/// ``ServedConnection/idleDeadline(after:)``) and whenever the last response has been fully
/// handed to the socket, and ends when the next request head arrives. A connection waiting for a slow
/// (delayed) response or receiving a slow upload is busy and never closed by this handler;
/// `IdleStateHandler` can't tell these apart, because it only watches for reads and writes.
///
/// It sits after `HTTPServerPipelineHandler`, so it sees one request at a time.
final class KeepAliveTimeout: ChannelDuplexHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let timeout: TimeAmount
    private let connection: ServedConnection
    private var inProgress = 0
    private var timer: Scheduled<Void>?

    init(timeout: Duration, connection: ServedConnection) {
        self.timeout = .nanoseconds(max(0, timeout.nanoseconds))
        self.connection = connection
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        disarm()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) {
            inProgress += 1
            disarm()
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .end = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        // The response is done when its last byte has gone to the socket, not when it is queued.
        let written = context.eventLoop.makePromise(of: Void.self)
        written.futureResult.assumeIsolated().whenComplete { [self] _ in
            inProgress = max(0, inProgress - 1)
            if inProgress == 0, context.channel.isActive { arm(context: context) }
        }
        written.futureResult.cascade(to: promise)
        context.write(data, promise: written)
    }

    private func arm(context: ChannelHandlerContext) {
        disarm()
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: connection.idleDeadline(after: timeout)) { [self] in
            timer = nil
            if inProgress == 0 { context.close(promise: nil) }
        }
    }

    private func disarm() {
        timer?.cancel()
        timer = nil
    }
}
