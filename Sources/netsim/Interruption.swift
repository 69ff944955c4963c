import Foundation
import NetsimRunner

/// Ctrl-C or SIGTERM during `netsim run` or `netsim test`: what the runs in flight registered
/// (``InterruptCleanup``: their captures closed, their exec clients sent SIGTERM) is done, one
/// line says so on stderr, and netsim exits with 128 + the signal, as a shell reports it.
/// Before, the default action killed netsim at once: a run's pcap was cut at its writer's
/// buffer and unreadable, and an exec client that reads no stdin outlived it.
///
/// A real handler (sigaction) that writes the signal's number into a pipe, and a thread that
/// reads it and does the rest: whichever thread the kernel delivers the signal to runs the
/// handler. A Dispatch signal source with the signal ignored was first tried: under a loaded
/// test batch the SIGINT went to a thread that ignored it and the run went on to exit 0.
enum Interruption {
    /// The pipe's write end, for the handler (a C function cannot capture).
    private nonisolated(unsafe) static var writeEnd: Int32 = -1

    /// Installs the handler for `command` (`run`, `test`). Call once, before the runs start.
    static func install(for command: String) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return }  // without a pipe the default action stays
        writeEnd = fds[1]
        let readEnd = fds[0]
        Thread {
            var number: UInt8 = 0
            while read(readEnd, &number, 1) != 1 {}
            let sig = Int32(number)
            let stopped = InterruptCleanup.runAll()
            let name = sig == SIGINT ? "SIGINT" : "SIGTERM"
            let line = "\nnetsim \(command): interrupted by \(name); \(stopped == 0 ? "nothing was running" : "the runs in flight were stopped (their clients sent SIGTERM, their captures closed)"); no report was written\n"
            FileHandle.standardError.write(Data(line.utf8))
            fflush(nil)
            _exit(128 + sig)  // not exit(): no atexit handlers racing the event loops' threads
        }.start()
        var action = sigaction()
        #if canImport(Glibc)
        action.__sigaction_handler.sa_handler = { sig in
            var number = UInt8(truncatingIfNeeded: sig)
            _ = write(Interruption.writeEnd, &number, 1)  // async-signal-safe
        }
        #else
        action.__sigaction_u.__sa_handler = { sig in
            var number = UInt8(truncatingIfNeeded: sig)
            _ = write(Interruption.writeEnd, &number, 1)
        }
        #endif
        sigemptyset(&action.sa_mask)
        for sig in [SIGINT, SIGTERM] { sigaction(sig, &action, nil) }
    }
}
