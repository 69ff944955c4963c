import NIOCore

/// How long an API connection may take over a request, and stay idle between requests.
public struct APIDeadlines: Sendable {
    /// From a request's first byte to its last: after it the client gets `408 Request Timeout`
    /// and the connection closes (nginx's `client_header_timeout`/`client_body_timeout`, 60 s).
    public var request: Duration
    /// With no request under way (a kept-alive connection between requests): closed, quietly.
    public var idle: Duration

    public init(request: Duration = .seconds(30), idle: Duration = .seconds(120)) {
        self.request = request
        self.idle = idle
    }
}

/// First in an API connection's pipeline, before NIO's HTTP decoder: holds a connection to
/// ``APIDeadlines``. A client that sent half a head, or a body shorter than its Content-Length,
/// kept its connection (and a descriptor) for as long as it liked (QA 59).
///
/// It sees the raw bytes, so it knows a request has begun before the decoder has a head; the
/// ``APIHandler`` after the decoder says when the answer went out (``requestAnswered()``).
final class APIConnectionDeadlines: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let deadlines: APIDeadlines
    private var context: ChannelHandlerContext?
    private var timer: Scheduled<Void>?
    /// A request's bytes have come and its answer has not gone out.
    private var requestUnderWay = false
    /// The connection is over (408 sent, or closed): no timer is armed again.
    private var over = false

    init(deadlines: APIDeadlines) { self.deadlines = deadlines }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { arm(deadlines.idle) }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(deadlines.idle)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        over = true
        timer?.cancel()
        context.fireChannelInactive()
    }

    /// Lets go of the context it kept: the context holds this handler, so keeping it made a
    /// cycle that outlived the connection (QA 66: about 450 bytes per API or metrics connection,
    /// for good).
    func handlerRemoved(context: ChannelHandlerContext) {
        over = true
        timer?.cancel()
        timer = nil
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !requestUnderWay, !over {
            requestUnderWay = true
            arm(deadlines.request)
        }
        context.fireChannelRead(data)
    }

    /// The request under way has come whole: no deadline while the API works on it (a reset
    /// may take a while), none of the client's making.
    func requestReceived() {
        timer?.cancel()
        timer = nil
    }

    /// The answer to the request under way was written: idle again (bytes of a pipelined next
    /// request may already have come; they start its own deadline as they are read).
    func requestAnswered() {
        guard !over else { return }
        requestUnderWay = false
        arm(deadlines.idle)
    }

    private func arm(_ after: Duration) {
        timer?.cancel()
        guard let context, !over else { return }
        timer = context.eventLoop.scheduleTask(in: .nanoseconds(after.nanoseconds)) { [self] in expired() }
    }

    private func expired() {
        guard let context, !over else { return }
        over = true
        guard requestUnderWay else {
            context.close(promise: nil)  // idle: nothing to answer
            return
        }
        let body = #"{"error":"request not complete within \#(deadlines.request.compactDescription)","status":408}"# + "\n"
        let answer = "HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(channel.allocator.buffer(string: answer))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }
}
