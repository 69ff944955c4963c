import NIOCore
import NIOHTTP2

/// Ends an HTTP/2 connection that has had no open stream for `timeout` the way real servers do
/// (nginx's `keepalive_timeout`, Go's `IdleTimeout`): a GOAWAY with NO_ERROR and the last stream
/// it processed, then a close. A client that pools the connection learns it is gone from the
/// GOAWAY instead of from a reset on its next request.
///
/// It sits after `NIOHTTP2Handler` on the connection's channel, counting streams from the
/// handler's stream-created and stream-closed events.
final class HTTP2IdleTimeout: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private let timeout: TimeAmount
    private var open = Set<HTTP2StreamID>()
    private var lastStream = HTTP2StreamID.rootStream
    private var timer: Scheduled<Void>?

    init(timeout: Duration) {
        self.timeout = .nanoseconds(max(0, timeout.nanoseconds))
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

    func handlerRemoved(context: ChannelHandlerContext) { disarm() }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let created = event as? NIOHTTP2StreamCreatedEvent {
            open.insert(created.streamID)
            if created.streamID > lastStream { lastStream = created.streamID }
            disarm()
        } else if let closed = event as? StreamClosedEvent {
            open.remove(closed.streamID)
            if open.isEmpty { arm(context: context) }
        }
        context.fireUserInboundEventTriggered(event)
    }

    private func arm(context: ChannelHandlerContext) {
        disarm()
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [self] in
            timer = nil
            guard open.isEmpty, context.channel.isActive else { return }
            let goAway = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: lastStream, errorCode: .noError, opaqueData: nil))
            context.writeAndFlush(wrapOutboundOut(goAway)).assumeIsolated().whenComplete { _ in
                context.close(promise: nil)
            }
        }
    }

    private func disarm() {
        timer?.cancel()
        timer = nil
    }
}
