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
public final class AcceptBackoff: ChannelInboundHandler, Sendable {
    public typealias InboundIn = any Channel

    /// How long the listener waits after such a failure.
    public static let wait = TimeAmount.seconds(1)

    private let onPause: @Sendable (IOError) -> Void
    private let resume: @Sendable (any Channel) -> Void

    /// - Parameters:
    ///   - onPause: told each failure that pauses the listener (the relay logs it).
    ///   - resume: turns accepting back on after ``wait``; by default `autoRead` on (the relay
    ///     asks its connection limit instead).
    public init(onPause: @escaping @Sendable (IOError) -> Void = { _ in },
                resume: @escaping @Sendable (any Channel) -> Void = { $0.setOption(ChannelOptions.autoRead, value: true).whenFailure { _ in } }) {
        self.onPause = onPause
        self.resume = resume
        DescriptorReserve.prepare()
    }

    /// True for the failures that pause the listener.
    public static func isExhaustion(errno code: Int32) -> Bool {
        [EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(code)
    }

    public func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? IOError, Self.isExhaustion(errno: error.errnoCode) {
            try? context.channel.syncOptions?.setOption(ChannelOptions.autoRead, value: false)
            DescriptorReserve.listenerPaused()  // room for the runtime while no accept takes it
            onPause(error)
            let channel = context.channel
            context.eventLoop.scheduleTask(in: Self.wait) { [resume] in
                DescriptorReserve.listenerResuming()
                resume(channel)
            }
        }
        context.fireErrorCaught(error)
    }
}
