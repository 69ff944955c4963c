#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore

/// Whether a TCP socket has delivered everything written to it: nothing waiting to be sent and
/// nothing sent but unacknowledged.
///
/// Why: a replayed RST is a close with SO_LINGER 0, and that discards whatever the kernel still
/// holds. A write's completion only means the kernel took the bytes; behind a slow reader (or a
/// relay adding latency) most of a 128 KiB answer can still be queued, so the client got 32 KiB
/// and a reset where the capture shows the whole answer acknowledged before the RST. The replay
/// waits for this before it resets.
enum SendQueue {
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
    static func isDrained(_ socket: any SocketOptionProvider) -> EventLoopFuture<Bool?> {
        #if os(Linux)
        let info: EventLoopFuture<KernelTCPInfo> = socket.unsafeGetSocketOption(
            level: SocketOptionLevel(IPPROTO_TCP), name: SocketOptionName(TCP_INFO))
        return info.map { Optional($0.unacked == 0 && $0.notSent == 0) }.recover { _ in nil }
        #else
        return socket.eventLoop.makeSucceededFuture(nil)
        #endif
    }
}
