#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore

/// Put in a listener's pipeline: after an accept that failed for want of descriptors, buffers
/// or memory (`EMFILE`, `ENFILE`, `ENOBUFS`, `ENOMEM`), the listener stops accepting for
/// ``wait``, then ``resume`` runs; any other failure (a client that gave up before its accept,
/// `ECONNABORTED`) is retried at once. Every listener netsim makes has one.
///
/// Why: the listening socket stays readable while connections queue, so retrying at once spins
/// a core (a relay with 84 clients queued under `ulimit -n 100` burned 5 s of CPU in 6.5 s).
/// Why not NIO's `AcceptBackoffHandler`: it holds back the channel's next `read()`, but when a
/// read cycle's first accept fails, NIO's read stays pending (only an accepted socket clears
/// it) and the socket stays registered, so the next failure came 25 ms later under load.
/// Turning `autoRead` off withdraws that read (NIO unregisters the socket). While it waits, the
/// process's ``DescriptorReserve`` is given back, so the runtime has descriptors to open.
public final class AcceptBackoff: ChannelInboundHandler, @unchecked Sendable {
    // `@unchecked Sendable`: `exhausted`, `lastPause` and `holdsReserve` are only touched on the listener's event loop.
    public typealias InboundIn = any Channel
    public typealias InboundOut = any Channel

    /// How long the listener waits after such a failure.
    public static let wait = TimeAmount.seconds(1)
    /// How long without a pause before the next is ``onPause``'s `first` again.
    public static let quiet = TimeAmount.seconds(60)

    private let onPause: @Sendable (IOError, _ first: Bool) -> Void
    private let resume: @Sendable (any Channel) -> Void
    private let onRecover: @Sendable () -> Void
    /// Paused for want of descriptors, and no accept has succeeded since.
    private var exhausted = false
    /// When the listener last paused for want of descriptors.
    private var lastPause: NIODeadline?
    /// This listener's pause holds the ``DescriptorReserve`` given back, until it resumes or is
    /// removed (a listener closed, or its loop shut down, within the wait never resumes: the
    /// reserve stayed given back, and every later upstream connect in the process waited for good).
    private var holdsReserve = false

    /// - Parameters:
    ///   - onPause: told each failure that pauses the listener (the relay logs it), and whether it
    ///     is the first of an episode: the first pause, or the first after ``quiet`` without one
    ///     (the relay warns then). Under overload accepts and pauses alternate every second, as
    ///     connections that found no descriptor close; that is one episode, not one a second.
    ///   - resume: turns accepting back on after ``wait``; by default `autoRead` on (the relay
    ///     asks its connection limit instead).
    ///   - onRecover: told once when an accept succeeds after such pauses (the relay logs
    ///     `listener_resumed`: each pause was logged, and their end was not).
    public init(onPause: @escaping @Sendable (IOError, _ first: Bool) -> Void = { _, _ in },
                resume: @escaping @Sendable (any Channel) -> Void = { $0.setOption(ChannelOptions.autoRead, value: true).whenFailure { _ in } },
                onRecover: @escaping @Sendable () -> Void = {}) {
        self.onPause = onPause
        self.resume = resume
        self.onRecover = onRecover
        DescriptorReserve.prepare()
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        releaseReserve()
    }

    /// Ends this listener's hold on the reserve (the last to end takes it back).
    private func releaseReserve() {
        guard holdsReserve else { return }
        holdsReserve = false
        DescriptorReserve.listenerResuming()
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if exhausted {
            exhausted = false
            onRecover()
        }
        context.fireChannelRead(data)
    }

    /// A pause's reason as the event log gives it: `accept failed: too many open files (errno
    /// 24); accepting again in 1 s`.
    public static func pauseReason(_ error: IOError) -> String {
        "accept failed: \(String(cString: strerror(error.errnoCode)).lowercased()) (errno \(error.errnoCode)); accepting again in 1 s"
    }

    /// True for the failures that pause the listener.
    public static func isExhaustion(errno code: Int32) -> Bool {
        [EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(code)
    }

    public func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? IOError, Self.isExhaustion(errno: error.errnoCode) {
            try? context.channel.syncOptions?.setOption(ChannelOptions.autoRead, value: false)
            let now = NIODeadline.now()
            let first = lastPause.map { now - $0 >= Self.quiet } ?? true
            exhausted = true
            lastPause = now
            if !holdsReserve {
                holdsReserve = true
                DescriptorReserve.listenerPaused()  // room for the runtime while no accept takes it
            }
            onPause(error, first)
            let channel = context.channel
            context.eventLoop.scheduleTask(in: Self.wait) { [self] in
                releaseReserve()
                resume(channel)
            }
        }
        context.fireErrorCaught(error)
    }
}
