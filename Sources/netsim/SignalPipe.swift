import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Signals caught by a real handler (sigaction) that writes the signal's number into a pipe, and
/// a thread of its own that reads the pipe and calls `handler` once per signal, outside the
/// handler's restrictions. Whichever thread the kernel delivers a process-directed signal to runs
/// the handler, so no signal is lost.
///
/// Why not a Dispatch signal source: it needs the signal ignored (SIG_IGN), and a signal the
/// kernel hands to a thread that ignores it is discarded. Under a loaded test batch `netsim run`
/// lost its SIGINT that way and went on to exit 0; the relay's Ctrl-C had the same hazard.
final class SignalPipe: @unchecked Sendable {
    /// The pipe's write end per signal number, for the C handler (it cannot capture). Plain
    /// memory, allocated before any handler is installed: reading it is async-signal-safe.
    private nonisolated(unsafe) static let writeEnds: UnsafeMutablePointer<Int32> = {
        let table = UnsafeMutablePointer<Int32>.allocate(capacity: 128)
        table.initialize(repeating: -1, count: 128)
        return table
    }()

    private let signals: [Int32]
    private let writeEnd: Int32

    /// Installs the handler for `signals`, replacing any earlier `SignalPipe` for them. Returns
    /// nil when no pipe can be made (out of descriptors): the signals keep their default action.
    /// Keep it while the signals should be caught; once it is gone they have their default
    /// action again.
    init?(signals: [Int32], handler: @escaping @Sendable (Int32) -> Void) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return nil }
        // Close-on-exec: programs netsim starts (exec clients, `ip`) must not inherit the pipe.
        // (Glibc's module does not offer pipe2; the pipe is made before any child is started.)
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let readEnd = fds[0]
        self.signals = signals
        self.writeEnd = fds[1]
        let thread = Thread {
            Self.takeOnThisThread(signals)
            while true {
                var number: UInt8 = 0
                let count = read(readEnd, &number, 1)
                if count == 1 { handler(Int32(number)); continue }
                if count < 0 && errno == EINTR { continue }
                return  // the write end is never closed; this is only reached on a broken pipe
            }
        }
        thread.start()
        let table = Self.writeEnds
        var action = sigaction()
        #if canImport(Glibc) || canImport(Musl)
        action.__sigaction_handler.sa_handler = { sig in
            var number = UInt8(truncatingIfNeeded: sig)
            _ = write(SignalPipe.writeEnds[Int(sig)], &number, 1)  // async-signal-safe
        }
        #else
        action.__sigaction_u.__sa_handler = { sig in
            var number = UInt8(truncatingIfNeeded: sig)
            _ = write(SignalPipe.writeEnds[Int(sig)], &number, 1)
        }
        #endif
        action.sa_flags = SA_RESTART
        sigemptyset(&action.sa_mask)
        for sig in signals where sig > 0 && sig < 128 {
            table[Int(sig)] = fds[1]
            sigaction(sig, &action, nil)
        }
    }

    /// Names the reading thread and unblocks `signals` on it. A thread inherits its creator's
    /// mask, and the creator is usually one of Dispatch's or the cooperative pool's threads, which
    /// block nearly every signal; so do NIO's loops made from them. The kernel then had only the
    /// main thread to hand a Ctrl-C to (libdispatch parks it in `sigsuspend`), and a CI run once
    /// went on to exit 0 after its SIGINT. With the reader taking them too, a thread that is
    /// waiting in `read(2)` can always take the signal.
    private static func takeOnThisThread(_ signals: [Int32]) {
        Thread.current.name = "netsim signals"  // set from the thread itself, or Linux never sees it
        var set = sigset_t()
        sigemptyset(&set)
        for sig in signals where sig > 0 && sig < 128 { sigaddset(&set, sig) }
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }

    /// Gives the signals still routed here their default action back. The pipe and its thread
    /// are left as they are: a handler already running may still write to the pipe, and closing
    /// it could hand that byte to whatever file reuses the descriptor.
    deinit {
        for sig in signals where sig > 0 && sig < 128 && Self.writeEnds[Int(sig)] == writeEnd {
            signal(sig, SIG_DFL)
            Self.writeEnds[Int(sig)] = -1
        }
    }
}
