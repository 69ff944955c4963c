import NIOCore

/// Put in a listener's pipeline (with ``AcceptBackoff`` before it): holds at most ``limit``
/// accepted connections open. At the limit the listener stops reading (`autoRead` off), the
/// kernel keeps completing new clients' handshakes into the listen queue, and they are accepted
/// as connections close, as HAProxy does at `maxconn`. The relay has its own limit (it counts
/// relayed connections); this one serves listeners whose connections are their accepted
/// channels (`netsim proxy`).
///
/// All its state lives on the listener's event loop: an accepted channel's close is counted
/// there, whatever loop the channel runs on.
public final class ConnectionGate: ChannelInboundHandler, @unchecked Sendable {
    // `@unchecked Sendable`: `open`, `paused` and `listener` are only touched on the listener's loop.
    public typealias InboundIn = any Channel
    public typealias InboundOut = any Channel

    /// The most connections open at once.
    public let limit: Int
    /// The most connections a listener accepts in one read cycle (its `maxMessagesPerRead`): the
    /// room left under `limit`, at least 1 (a paused listener does not read), at most NIO's 4.
    public static func acceptsPerCycle(open: Int, limit: Int) -> UInt { UInt(max(1, min(limit - open, 4))) }
    private let changed: @Sendable (_ paused: Bool, _ open: Int) -> Void
    private var open = 0
    private var paused = false
    private var listener: (any Channel)?

    /// - Parameter changed: told each pause (at the limit) and each resume, with the count open.
    public init(limit: Int, changed: @escaping @Sendable (_ paused: Bool, _ open: Int) -> Void = { _, _ in }) {
        self.limit = max(1, limit)
        self.changed = changed
    }

    public func handlerAdded(context: ChannelHandlerContext) {
        listener = context.channel
        update()  // before the first read cycle: its size
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let accepted = unwrapInboundIn(data)
        open += 1
        let loop = context.eventLoop
        accepted.closeFuture.whenComplete { [self] _ in
            loop.execute { self.closed() }
        }
        update()
        context.fireChannelRead(data)
    }

    /// For ``AcceptBackoff``'s resume: reads again only below the limit.
    public func resume() {
        guard let listener else { return }
        listener.eventLoop.execute { self.update() }
    }

    private func closed() {
        open -= 1
        update()
    }

    /// Reads below the limit, pauses at it. A connection that closes while ``AcceptBackoff``
    /// holds the listener back ends that wait early: it freed descriptors. A read cycle accepts
    /// no more than the room left: NIO accepts up to `maxMessagesPerRead` in one, whatever
    /// `autoRead` becomes meanwhile, and a burst went past the limit.
    private func update() {
        guard let listener else { return }
        let pause = open >= limit
        try? listener.syncOptions?.setOption(ChannelOptions.maxMessagesPerRead, value: Self.acceptsPerCycle(open: open, limit: limit))
        try? listener.syncOptions?.setOption(ChannelOptions.autoRead, value: !pause)
        if pause != paused {
            paused = pause
            changed(pause, open)
        }
    }
}
