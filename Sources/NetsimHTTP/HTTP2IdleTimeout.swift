import NIOCore
import NIOHTTP2

/// Ends an HTTP/2 connection that has had no open stream for `timeout` the way real servers do
/// (nginx's `keepalive_timeout`, Go's `IdleTimeout`): a GOAWAY with NO_ERROR and the last stream
/// it processed, then a close. A client that pools the connection learns it is gone from the
/// GOAWAY instead of from a reset on its next request.
///
/// It sits after `NIOHTTP2Handler` on the connection's channel (to write the GOAWAY) and is the
/// handler's stream delegate (the inline multiplexer reports streams opening and closing only to
/// its delegate, not down the pipeline).
// `@unchecked Sendable`: NIOHTTP2 calls the delegate on the connection's event loop, where
// everything else of this handler runs.
final class HTTP2IdleTimeout: ChannelDuplexHandler, NIOHTTP2StreamDelegate, @unchecked Sendable {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private let timeout: TimeAmount
    private let connection: ServedConnection
    private var open = Set<HTTP2StreamID>()
    private var lastStream = HTTP2StreamID.rootStream
    private var timer: Scheduled<Void>?
    private var context: ChannelHandlerContext?

    init(timeout: Duration, connection: ServedConnection) {
        self.timeout = .nanoseconds(max(0, timeout.nanoseconds))
        self.connection = connection
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
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
        self.context = nil
    }

    func streamCreated(_ id: HTTP2StreamID, channel: any Channel) {
        open.insert(id)
        if id > lastStream { lastStream = id }
        disarm()
    }

    func streamClosed(_ id: HTTP2StreamID, channel: any Channel) {
        open.remove(id)
        if open.isEmpty, let context { arm(context: context) }
    }

    private func arm(context: ChannelHandlerContext) {
        disarm()
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: connection.idleDeadline(after: timeout)) { [self] in
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
