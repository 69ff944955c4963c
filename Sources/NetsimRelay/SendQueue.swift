#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore

/// Whether a TCP socket has delivered everything written to it: nothing waiting to be sent and
/// nothing sent but unacknowledged; and a reset that waits for it.
///
/// Why: a reset is a close with SO_LINGER 0, and that discards whatever the kernel still holds.
/// A write's completion only means the kernel took the bytes; behind a slow reader (or a relay
/// adding latency) most of a 128 KiB answer can still be queued. A replayed RST after a whole
/// answer gave the client 32 KiB of it; the relay's `cut=BYTES,rst` gave none of the BYTES it
/// promises. Both reset once this says the bytes are through.
public enum SendQueue {
    /// The kernel's `struct tcp_info` as far as `tcpi_notsent_bytes` (Linux 4.6 and later);
    /// glibc's declaration stops before it. Read as raw words; offsets from linux/tcp.h.
    private struct KernelTCPInfo: Sendable {
        var words: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                    UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)

        func uint32(at offset: Int) -> UInt32 {
            withUnsafeBytes(of: words) { $0.load(fromByteOffset: offset, as: UInt32.self) }
        }

        /// Segments sent and not acknowledged (`tcpi_unacked`).
        var unacked: UInt32 { uint32(at: 24) }
        /// Bytes written and not yet sent (`tcpi_notsent_bytes`).
        var notSent: UInt32 { uint32(at: 144) }
    }

    /// True once everything written has been sent and acknowledged; nil where the kernel cannot
    /// tell (not Linux, or the option fails): then the caller does not wait.
    public static func isDrained(_ socket: any SocketOptionProvider) -> EventLoopFuture<Bool?> {
        #if os(Linux)
        let info: EventLoopFuture<KernelTCPInfo> = socket.unsafeGetSocketOption(
            level: SocketOptionLevel(IPPROTO_TCP), name: SocketOptionName(TCP_INFO))
        return info.map { Optional($0.unacked == 0 && $0.notSent == 0) }.recover { _ in nil }
        #else
        return socket.eventLoop.makeSucceededFuture(nil)
        #endif
    }
}

extension SendQueue {
    /// Longest ``reset(_:within:)`` waits for the peer to take what was written: a peer that
    /// stopped reading gets the reset then, with the rest discarded.
    public static let drainLimit = TimeAmount.seconds(10)

    /// Resets `channel` (SO_LINGER 0, then close) once every byte written to it so far has been
    /// sent and acknowledged: NIO's pending writes first, then the kernel's queue, checked every
    /// millisecond for at most `limit`. Call on the channel's event loop.
    public static func reset(_ channel: any Channel, within limit: TimeAmount = drainLimit) {
        guard let options = channel as? any SocketOptionProvider else {
            channel.close(promise: nil)
            return
        }
        let giveUpAt = NIODeadline.now() + limit
        // An empty write completes after every write before it (NIO writes in order).
        channel.writeAndFlush(channel.allocator.buffer(capacity: 0)).whenComplete { _ in
            resetWhenDrained(channel, options, giveUpAt: giveUpAt)
        }
    }

    private static func resetWhenDrained(_ channel: any Channel, _ options: any SocketOptionProvider, giveUpAt: NIODeadline) {
        isDrained(options).whenComplete { result in
            if case .success(false) = result, NIODeadline.now() < giveUpAt {
                channel.eventLoop.scheduleTask(in: .milliseconds(1)) { resetWhenDrained(channel, options, giveUpAt: giveUpAt) }
                return
            }
            options.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
