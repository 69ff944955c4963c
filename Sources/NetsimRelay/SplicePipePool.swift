import CNetsimSplice
import NIOConcurrencyHelpers

/// A pipe between two sockets on the splice path: bytes go socket → pipe → socket without
/// entering userspace. Non-blocking, close-on-exec, sized with F_SETPIPE_SZ.
struct SplicePipe: Sendable {
    let readEnd: Int32
    let writeEnd: Int32
    /// Its capacity in bytes (the size asked for, or the kernel's default where that was refused).
    let capacity: Int
}

/// Pipes kept for reuse by the splice path, shared by every relay in the process.
///
/// Bounded: at most ``maximumIdle`` (16) idle pipes are kept — 16 MiB of pipe buffers, a quarter
/// of Linux's per-user soft limit; a pipe handed back beyond that, or one
/// that may still hold bytes, is closed. Making a pipe costs three system calls, so reuse
/// matters for short connections; keeping thousands would pin kernel memory for nothing.
final class SplicePipePool: Sendable {
    static let shared = SplicePipePool()

    /// The size each pipe asks for: 1 MiB, Linux's default `pipe-max-size` for unprivileged users.
    static let pipeSize: Int32 = 1 << 20
    let maximumIdle: Int
    private let idle = NIOLockedValueBox<[SplicePipe]>([])
    /// Pipes handed out and not yet given back (tests check that every one comes back).
    private let out = NIOLockedValueBox(0)

    init(maximumIdle: Int = 16) { self.maximumIdle = maximumIdle }

    /// An idle pipe, or a new one; nil (with the errno) when the system refuses one.
    func take() -> Result<SplicePipe, SpliceError> {
        if let pipe = idle.withLockedValue({ $0.popLast() }) {
            out.withLockedValue { $0 += 1 }
            return .success(pipe)
        }
        var fds: [Int32] = [-1, -1]
        let capacity = netsim_pipe(&fds, Self.pipeSize)
        guard capacity > 0 else { return .failure(SpliceError(errno: -capacity, operation: "pipe")) }
        out.withLockedValue { $0 += 1 }
        return .success(SplicePipe(readEnd: fds[0], writeEnd: fds[1], capacity: Int(capacity)))
    }

    /// Hands a pipe back: kept when `empty` and the pool has room, closed otherwise.
    func give(_ pipe: SplicePipe, empty: Bool) {
        out.withLockedValue { $0 -= 1 }
        let kept = empty && idle.withLockedValue { pipes in
            guard pipes.count < maximumIdle else { return false }
            pipes.append(pipe)
            return true
        }
        if !kept {
            netsim_close(pipe.readEnd)
            netsim_close(pipe.writeEnd)
        }
    }

    /// Idle pipes held now (tests check the bound and that pipes come back).
    var idleCount: Int { idle.withLockedValue { $0.count } }
    var outstanding: Int { out.withLockedValue { $0 } }
}

/// A system call of the splice path failed.
struct SpliceError: Error, CustomStringConvertible {
    let errno: Int32
    let operation: String
    var description: String { "\(operation): errno \(errno)" }
}
