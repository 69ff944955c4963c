import NIOCore
import NIOSSL
import NIOTLS

/// Holds back interception's connect to upstream until the TLS handshake has completed, so that
/// nothing is written — and no request is logged as forwarded — before the relay knows the
/// session is good (QA 48: a request was logged `http_request` although the handshake then
/// failed and the server never saw it). A failed or timed-out handshake fails the connect with
/// the reason, which the connection logs as its `upstream_failed`.
///
/// Sits right after the `NIOSSLClientHandler`; every event and error goes on past it, and it
/// leaves the pipeline once the handshake has completed.
final class TLSHandshakeGate: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    /// Why the handshake did not complete, when TLS itself gave no error.
    enum Failure: Error, CustomStringConvertible {
        case closed
        case timedOut(Duration)
        /// TLS refused the session: ``TLSFailure/explained(_:serverName:)``'s words.
        case refused(String)
        /// A socket error (a reset) in the middle of it, in ``SocketFailureText``'s words.
        case broken(String)

        var description: String {
            switch self {
            case .refused(let reason): "TLS with upstream failed: \(reason)"
            case .closed: "TLS with upstream failed: upstream closed the connection during the handshake"
            case .broken(let words): "TLS with upstream failed: the connection broke during the handshake: \(words)"
            case .timedOut(let limit): "TLS with upstream failed: no handshake within \(limit.compactDescription)"
            }
        }
    }

    private let promise: EventLoopPromise<Void>
    private let limit: Duration
    /// The name upstream's certificate must carry, for the failure's words.
    private let serverName: String?
    private var timer: Scheduled<Void>?
    private var done = false

    /// Completes when the handshake does.
    var handshake: EventLoopFuture<Void> { promise.futureResult }

    init(on eventLoop: any EventLoop, limit: Duration, serverName: String?) {
        promise = eventLoop.makePromise()
        self.limit = limit
        self.serverName = serverName
    }

    private func finish(_ result: Result<Void, any Error>) {
        guard !done else { return }
        done = true
        timer?.cancel()
        promise.completeWith(result)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { context.read() }
        let (limit, gate) = (self.limit, NIOLoopBound(self, eventLoop: context.eventLoop))
        // Held until it fires or ``finish(_:)`` cancels it, which every ending calls.
        timer = context.eventLoop.scheduleTask(in: .nanoseconds(limit.nanoseconds)) {
            gate.value.finish(.failure(Failure.timedOut(limit)))
        }
    }

    /// The handshake's reads are the gate's own: the leg's handler behind it lets none through
    /// until the connection is connected, which now waits for the handshake.
    func channelActive(context: ChannelHandlerContext) {
        context.fireChannelActive()
        if !done { context.read() }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.fireChannelReadComplete()
        if !done { context.read() }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        finish(.failure(Failure.closed))
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard case TLSUserEvent.handshakeCompleted = event else { return context.fireUserInboundEventTriggered(event) }
        finish(.success(()))
        context.fireUserInboundEventTriggered(event)
        // Its work is done: the session's bytes pass one handler fewer.
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // An EOF without close_notify before the handshake completed is a failed handshake too.
        switch TLSFailure(error) {
        case .closedWithoutCloseNotify: finish(.failure(Failure.closed))
        case .failed: finish(.failure(Failure.refused(TLSFailure.explained(error, serverName: serverName))))
        case .notTLS where error is IOError: finish(.failure(Failure.broken(SocketFailureText.classify(error).1)))
        case .notTLS: finish(.failure(error))
        }
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(.failure(Failure.closed))
        context.fireChannelInactive()
    }
}
