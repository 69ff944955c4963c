import Foundation
import NetsimCore

/// Ctrl-C, SIGTERM or SIGHUP (the terminal closed) during `netsim run` or `netsim test`: what
/// the runs in flight registered (``InterruptCleanup``: their captures closed, their exec
/// clients sent SIGTERM, their packet links' namespaces deleted) is done, one
/// line says so on stderr, and netsim exits with 128 + the signal, as a shell reports it.
/// `netsim test` registers its partial reports (``reportWhenInterrupted(_:)``), written after the
/// cleanup.
/// Before, the default action killed netsim at once: a run's pcap was cut at its writer's
/// buffer and unreadable, and an exec client that reads no stdin outlived it.
///
/// The signals come through ``SignalPipe``: a Dispatch signal source with the signal ignored was
/// first tried, and under a loaded test batch the SIGINT went to a thread that ignored it.
enum Interruption {
    /// Kept for the life of the process (a `SignalPipe` gone restores the default actions).
    private nonisolated(unsafe) static var pipe: SignalPipe?

    /// Set when the handler starts: the process is the handler's to end.
    private static let underWay = NSLock()
    private nonisolated(unsafe) static var started = false

    /// What writes the reports of an interrupted command, given the signal's name; it returns
    /// what it wrote, for the handler's line.
    private nonisolated(unsafe) static var report: (@Sendable (String) -> String?)?

    /// Registers `write`, which the handler calls after the cleanup with the signal's name
    /// (`SIGTERM`): the reports of what finished. It returns what it did ("partial reports
    /// written: results.xml"), or nil when it wrote nothing. Call before the runs start.
    static func reportWhenInterrupted(_ write: @escaping @Sendable (String) -> String?) {
        underWay.withLock { report = write }
    }

    /// Installs the handler for `command` (`run`, `test`). Call once, before the runs start.
    static func install(for command: String) {
        // Without a pipe (out of descriptors) the default action stays.
        pipe = SignalPipe(signals: [SIGINT, SIGTERM, SIGHUP]) { sig in
            let write = underWay.withLock {
                started = true
                return report
            }
            let done = InterruptCleanup.describe(InterruptCleanup.runAll()) ?? "nothing was running"
            let reported = write?(signalName(sig)) ?? "no report was written"
            let line = "netsim \(command): interrupted by \(signalName(sig)): \(done); \(reported)"
            // On a terminal the line starts below the `^C` it echoed; as a JSON record it is
            // one line that parses, like every other status line (QA 43: a blank line, then text).
            if StatusLines.json {
                printStatus(line, level: .warning)
            } else {
                StandardStream.error.write((isatty(STDERR_FILENO) == 1 ? "\n" : "") + line + "\n")
            }
            fflush(nil)
            _exit(128 + sig)  // not exit(): no atexit handlers racing the event loops' threads
        }
    }

    /// True once a signal's handler has started. What the runs report from then on is the
    /// cleanup's doing (an exec client sent SIGTERM "exited before answering"), not the client's:
    /// the live lines stop, and the handler's line says what happened.
    static var isUnderWay: Bool { underWay.withLock { started } }

    /// Called before the process ends on its own: while the handler undoes what the runs
    /// started, the run it interrupts may fail for it (its namespace deleted under its set-up)
    /// and would exit 1 first, without the handler's line (a SIGHUP while a packet link was being
    /// made exited 1 with nothing said). The handler's `_exit` ends the process meanwhile; a
    /// cleanup that hangs is given up on after `patience`.
    static func yieldToHandler(patience: Duration = .seconds(30)) {
        guard underWay.withLock({ started }) else { return }
        _ = DispatchSemaphore(value: 0).wait(timeout: .now() + patience.seconds)  // nothing signals it: only the _exit ends the wait
    }
}

/// `SIGINT`, `SIGTERM` or `SIGHUP`, as a user reads it.
func signalName(_ sig: Int32) -> String {
    switch sig {
    case SIGINT: "SIGINT"
    case SIGTERM: "SIGTERM"
    case SIGHUP: "SIGHUP"
    default: "signal \(sig)"
    }
}
