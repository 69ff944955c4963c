#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore
import NIOPosix
import NIOSSL
import NetsimCore
import NetsimFaults

/// The handler on each of a connection's two channels (the client leg and the upstream leg).
///
/// It owns no policy: it reports what its socket does to the ``ConnectionPair`` and carries out
/// what the pair's machine decides (write, half-close, reset). It also gates reading: the channel keeps
/// `autoRead` on, and this handler holds back the `read` calls while the pair says the far side
/// cannot take more (backpressure) — the GlueHandler pattern from SwiftNIO's examples.
/// `@unchecked Sendable`: confined to its channel's event loop; the upstream connect's
/// initializer closure carries it to that loop.
final class LegHandler: ChannelDuplexHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let leg: Leg
    /// Set by the pair; cleared when the pair finishes so the cycle breaks.
    var pair: ConnectionPair?
    private var context: ChannelHandlerContext?
    private var readPending = false
    private var readsAllowed = false
    /// Held by the splice path: while it moves this socket's bytes, NIO must not read them.
    private var spliceHolds = false
    /// `autoRead` is off: the splice path withdrew NIO's outstanding read (``setSpliceHolds(_:)``),
    /// or the channel came to the relay not reading; on again once reads are allowed.
    private var autoReadOff = false
    private(set) var isActive = false
    private(set) var outputClosed = false
    /// The peer ended its side (its FIN came).
    private var peerEnded = false
    /// The relay reset this leg (recorded once).
    private var resetSent = false
    /// The relay closed or reset this leg itself (as opposed to the peer closing it).
    private(set) var closedByRelay = false
    /// The last write, held until ``flush()`` sends it with a promise.
    private var heldWrite: ByteBuffer?
    /// While this leg's reads carry the kernel's receive times (``TimedReads``).
    private var timed: TimedReads?
    /// When reads were last allowed: bytes that waited in the socket while the relay did not
    /// read count as arriving then at the earliest, as a sender's bytes wait for a window.
    private var allowedSince: Int64 = 0

    init(leg: Leg) { self.leg = leg }

    // MARK: Inbound events → pair

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        isActive = context.channel.isActive
        // An adopted channel that was not reading (the forward proxy's two legs) is turned back
        // on here, once reads are allowed: NIO's own read on `autoRead`, set by its owner, went
        // past this gate (one read cycle over the backpressure limit).
        if context.channel.syncOptions.flatMap({ try? $0.getOption(ChannelOptions.autoRead) }) == false {
            autoReadOff = true
        }
        // An adopted channel (accepted elsewhere) is already active: no channelActive will come.
        if isActive { pair?.legActive(leg) }
        issuePendingRead()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timed = nil
        heldWrite = nil
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        isActive = true
        pair?.legActive(leg)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if let timed {
            readTimed(timed, first: unwrapInboundIn(data), context: context)
        } else {
            pair?.received(unwrapInboundIn(data), from: leg)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        pair?.readComplete(from: leg)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        pair?.writabilityChanged(of: leg, writable: context.channel.isWritable)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            peerEnded = true
            pair?.inputClosed(on: leg)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        pair?.failed(leg, error: error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        isActive = false
        timed = nil
        pair?.legInactive(leg)
    }

    // MARK: Read gating

    func read(context: ChannelHandlerContext) {
        if readsAllowed, !spliceHolds {
            context.read()
        } else {
            readPending = true
        }
    }

    /// Lets reads through (or holds them back). A read held back is issued when allowed again.
    func setReadsAllowed(_ allowed: Bool) {
        guard allowed != readsAllowed else { return }
        readsAllowed = allowed
        if allowed, let context { allowedSince = Int64(context.eventLoop.now.uptimeNanoseconds) }
        issuePendingRead()
    }

    /// Holds NIO's reads back while the splice path reads this socket (or lets them go again).
    ///
    /// Holding also withdraws the read NIO already has outstanding (its interest in the socket's
    /// readability, registered by the last `read` let through): `autoRead` off unregisters it.
    /// Otherwise NIO would read bytes the splice path is about to take, and could be woken for
    /// bytes a splice took first (a debug build of NIO asserts on that empty read). NIO still
    /// reads up to an EOF by itself; the pair orders those bytes behind the pipe's.
    func setSpliceHolds(_ holds: Bool) {
        guard holds != spliceHolds, let context else { return }
        spliceHolds = holds
        if holds {
            autoReadOff = true
            try? context.channel.syncOptions?.setOption(ChannelOptions.autoRead, value: false)
        }
        issuePendingRead()
    }

    private func issuePendingRead() {
        guard readsAllowed, !spliceHolds, let context else { return }
        if autoReadOff {
            // Back on, NIO issues a read itself: the one withdrawn, or the one held back since.
            autoReadOff = false
            readPending = false
            try? context.channel.syncOptions?.setOption(ChannelOptions.autoRead, value: true)
        } else if readPending {
            readPending = false
            context.read()
        }
    }

    // MARK: Timed reads

    /// From now on this leg's reads come with the kernel's receive times (``TimedReads``); stays
    /// with NIO's plain reads when the socket cannot be read that way.
    func startTimedReads() {
        guard timed == nil, isActive, let context else { return }
        timed = TimedReads.start(on: context.channel)
        allowedSince = Int64(context.eventLoop.now.uptimeNanoseconds)
    }

    /// NIO read `first`, the first byte of a readiness event: the rest is read here, with the
    /// kernel's receive time, up to ``Relay/readsPerCycle`` buffers while the pair allows it.
    private func readTimed(_ timed: TimedReads, first: ByteBuffer, context: ChannelHandlerContext) {
        var first = first
        var reads = 0
        while reads < Int(Relay.readsPerCycle) {
            reads += 1
            var buffer = timed.buffer(startingWith: first, allocator: context.channel.allocator)
            first.clear()
            let now = Int64(context.eventLoop.now.uptimeNanoseconds)
            switch timed.read(into: &buffer) {
            case .bytes(let kernelTime, let filled):
                // The machine caps it at now.
                pair?.received(buffer, from: leg, arrivedAt: max(kernelTime ?? now, allowedSince))
                guard filled, readsAllowed, !spliceHolds, isActive, self.timed === timed else { return }
            case .wouldBlock, .endOfFile:
                // A one-byte message (no stamp left to read), or its FIN: NIO reads the end.
                if buffer.readableBytes > 0 { pair?.received(buffer, from: leg) }
                return
            case .failed(let code):
                // What NIO does when a read fails: report the error, then close.
                if buffer.readableBytes > 0 { pair?.received(buffer, from: leg) }
                errorCaught(context: context, error: IOError(errnoCode: code, reason: "recvmsg"))
                return context.close(promise: nil)
            }
        }
    }

    // MARK: The splice path

    /// The socket's descriptor, borrowed for `body` — nil if the channel has none (not a socket,
    /// closed) or its bytes are not the socket's bytes (the relay's own TLS runs on it). Never close it.
    func withDescriptor<Result>(_ body: (Int32) -> Result) -> Result? {
        guard let context, (try? context.pipeline.syncOperations.handler(type: NIOSSLHandler.self)) == nil else { return nil }
        return try? context.channel.pipeline.syncOperations.withUnsafeTransportIfAvailable(of: NIOBSDSocket.Handle.self) { body($0) }
    }

    /// Bytes the peer sent that the socket holds unread (FIONREAD); nil when it cannot tell (no
    /// socket of its own, or TLS on it).
    var unreadBytes: Int? {
        withDescriptor { fd -> Int? in
            var count: Int32 = 0
            return ioctl(fd, UInt(FIONREAD), &count) == 0 ? Int(count) : nil
        } ?? nil
    }

    /// Succeeds once every write made before it has gone to the socket.
    func writesDone() -> EventLoopFuture<Void>? {
        guard let context else { return nil }
        releaseHeldWrite()
        let promise = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(capacity: 0)), promise: promise)
        return promise.futureResult
    }

    // MARK: Actions the pair asks for

    var isWritable: Bool { context?.channel.isWritable ?? false }

    /// The leg's channel, while the handler is in its pipeline.
    var channel: (any Channel)? { context?.channel }

    var localAddress: SocketAddress? { context?.channel.localAddress }
    var remoteAddress: SocketAddress? { context?.channel.remoteAddress }

    /// The peer's address, for the event log (nil once the channel no longer knows it).
    var remoteEndpoint: Endpoint? {
        guard let address = context?.channel.remoteAddress, let host = address.ipAddress, let port = address.port else { return nil }
        return Endpoint(host: host, port: port)
    }

    /// Writes `buffer` (sent at the next ``flush()``). The last write before a flush is held
    /// back until then, to go with the flush's promise.
    func write(_ buffer: ByteBuffer) {
        releaseHeldWrite()
        heldWrite = buffer
    }

    /// Flushes the writes, the last with a promise: a write that fails (the peer reset the
    /// connection: ECONNRESET, EPIPE) makes NIO close the channel and fail the writes still
    /// pending, with no error event, and the reset is consumed, so nothing else tells it from a
    /// FIN. Without this the leg looked closed by the peer's FIN (QA 34: a client's reset under
    /// `--tls intercept` was logged, and passed upstream, as a FIN). One promise per flush; a
    /// write of its own for it cost the round trip 2 µs.
    func flush() {
        guard let context else { return }
        if let last = heldWrite {
            heldWrite = nil
            let sent = context.eventLoop.makePromise(of: Void.self)
            sent.futureResult.whenFailure { [weak self] error in
                // Socket errors only: not the relay's own close, nor TLS (reported as an error event).
                guard let self, error is IOError else { return }
                self.pair?.failed(self.leg, error: error)
            }
            context.write(wrapOutboundOut(last), promise: sent)
        }
        context.flush()
    }

    /// Hands NIO the write held for the next flush, before anything else is written or closed.
    private func releaseHeldWrite() {
        guard let held = heldWrite else { return }
        heldWrite = nil
        context?.write(wrapOutboundOut(held), promise: nil)
    }

    /// Sends FIN after every byte already written has gone out.
    ///
    /// NIO's half-close waits for pending writes, except when the input side is already closed:
    /// then it escalates to a full close and would drop them. An empty write completes after
    /// all writes ahead of it, so the FIN is sent from its completion.
    func shutdownOutput() {
        guard !outputClosed, let done = writesDone() else { return }
        outputClosed = true
        done.whenComplete { [weak self] _ in
            guard let self, let context = self.context else { return }
            self.pair?.tapEnded(self.leg, .fin)
            context.close(mode: .output, promise: nil)
        }
    }

    /// Closes with RST (SO_LINGER 0), discarding what the kernel still holds; with `afterSent`,
    /// once what was written has reached the peer (``SendQueue/reset(_:within:)``).
    func reset(afterSent: Bool = false) {
        guard let context else { return }
        releaseHeldWrite()
        // The kernel resets a connection closed with SO_LINGER 0 unless both sides have ended it
        // (tcp_disconnect): after the relay's FIN too, while the peer has not sent its own (QA 54:
        // the client read ECONNRESET and the capture ended with the FIN).
        if !resetSent, !(outputClosed && peerEnded) { pair?.tapEnded(leg, .rst) }
        resetSent = true
        outputClosed = true
        closedByRelay = true
        let channel = context.channel
        if afterSent {
            SendQueue.reset(channel)
            return
        }
        guard let options = channel as? any SocketOptionProvider else {
            channel.close(promise: nil)
            return
        }
        options.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in channel.close(promise: nil) }
    }

    /// Closes both directions now (FIN if nothing is unread, as close(2) does).
    func close() {
        releaseHeldWrite()
        if !outputClosed, context != nil { pair?.tapEnded(leg, .fin) }
        outputClosed = true
        closedByRelay = true
        context?.close(promise: nil)
    }
}
