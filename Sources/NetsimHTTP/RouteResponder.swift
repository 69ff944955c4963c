import NIOCore
import NIOHTTP1

/// Answers each request of one connection from the route table: waits the route's delay (a task
/// on the event loop, never a blocked thread), writes the head, streams the body while the
/// channel is writable, and closes the connection when the response or the client says so.
///
/// It is the last handler, after `HTTPServerPipelineHandler`, which hands it one request at a
/// time and holds pipelined ones back until the previous response has ended: so answers go out
/// in request order and this handler never has more than one request to think about.
final class RouteResponder: ChannelDuplexHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = Never
    typealias OutboundOut = HTTPServerResponsePart

    private let routes: RouteTable
    /// The request being received or answered.
    private var request: HTTPRequestHead?
    /// Between the request's end and the response's end.
    private var responding = false
    private var delayed: Scheduled<Void>?
    private var plan: ResponsePlan?
    /// The client half-closed: close once the response in progress has been written.
    private var closeWhenDone = false
    /// A close is on its way; anything that still arrives is ignored.
    private var closing = false
    /// Completes when the last response's final bytes have been written.
    private var lastResponseWritten: EventLoopFuture<Void>?
    /// ``pump(context:)`` is running; asked again meanwhile, it goes round once more.
    private var pumping = false
    private var pumpAgain = false

    init(routes: RouteTable) {
        self.routes = routes
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            request = head
            // A client that waits for permission before uploading its body (curl, Go) gets it.
            if head.headers[canonicalForm: "expect"].contains(where: { $0.lowercased() == "100-continue" }) {
                context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .continue))), promise: nil)
            }
        case .body:
            break  // counted by RequestRecorder; the routes don't depend on it
        case .end:
            guard let head = request else { return }
            responding = true
            let route = routes.route(method: head.method.rawValue, target: head.uri)
            if route.delay > .zero {
                delayed = context.eventLoop.assumeIsolated().scheduleTask(in: .nanoseconds(route.delay.nanoseconds)) { [self] in
                    delayed = nil
                    respond(route: route, to: head, context: context)
                }
            } else {
                respond(route: route, to: head, context: context)
            }
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            // The client will send nothing more: finish the answer it is waiting for, then close
            // (a request it had not finished sending will never complete).
            // The half-close can arrive from inside the write of the previous response's end
            // (the pipeline handler delivers it then), before that end is flushed: so close once
            // the last response has been written, not right now.
            if responding {
                closeWhenDone = true
            } else if let lastResponseWritten {
                lastResponseWritten.assumeIsolated().whenComplete { [self] _ in close(context: context) }
            } else {
                close(context: context)
            }
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { pump(context: context) }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        delayed?.cancel()
        delayed = nil
        plan = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A socket error (reset, broken pipe): the connection is of no further use.
        close(context: context)
    }

    // MARK: Writing the response

    private func respond(route: HTTPRoute, to head: HTTPRequestHead, context: ChannelHandlerContext) {
        guard context.channel.isActive, !closing else { return }
        let plan = ResponsePlan(route: route, request: head, allocator: context.channel.allocator)
        context.write(wrapOutboundOut(.head(plan.head)), promise: nil)
        self.plan = plan
        pump(context: context)
    }

    /// Writes body pieces while the channel takes them; resumes on writability.
    ///
    /// A flush can make the channel writable again, and NIO tells this handler at once, from
    /// inside the flush: a pump started there would write pieces the outer one still holds, end
    /// the answer, and leave the outer one writing body after the end (NIO's HTTP encoder traps
    /// on that). So a pump asked for during a pump only makes the outer one go round again.
    private func pump(context: ChannelHandlerContext) {
        if pumping {
            pumpAgain = true
            return
        }
        pumping = true
        defer { pumping = false }
        repeat {
            pumpAgain = false
            pumpOnce(context: context)
        } while pumpAgain
    }

    private func pumpOnce(context: ChannelHandlerContext) {
        guard var plan else { return }
        while context.channel.isWritable, var pieces = plan.body, let piece = pieces.next() {
            plan.body = pieces
            self.plan = plan
            context.write(wrapOutboundOut(.body(.byteBuffer(piece))), promise: nil)
            if pieces.chunked {
                context.flush()
                if self.plan == nil { return }  // the flush found the connection gone
            }
        }
        if plan.body?.isFinished ?? true {
            finish(closeAfter: plan.closeAfter || closeWhenDone, context: context)
        } else {
            context.flush()
        }
    }

    /// Ends the response. State is reset *before* writing `.end`, because writing it makes the
    /// pipeline handler deliver the next pipelined request to this handler at once.
    private func finish(closeAfter: Bool, context: ChannelHandlerContext) {
        plan = nil
        request = nil
        responding = false
        closing = closeAfter
        let written = context.eventLoop.makePromise(of: Void.self)
        lastResponseWritten = written.futureResult
        if closeAfter {
            written.futureResult.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: written)
    }

    private func close(context: ChannelHandlerContext) {
        guard !closing else { return }
        closing = true
        delayed?.cancel()
        delayed = nil
        context.close(promise: nil)
    }
}
