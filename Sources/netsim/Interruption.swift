import Dispatch
import Foundation
import NetsimRunner

/// Ctrl-C or SIGTERM during `netsim run` or `netsim test`: what the runs in flight registered
/// (``InterruptCleanup``: their captures closed, their exec clients sent SIGTERM) is done, one
/// line says so on stderr, and netsim exits with 128 + the signal, as a shell reports it.
/// Before, the default action killed netsim at once: a run's pcap was cut at its writer's
/// buffer and unreadable, and an exec client that reads no stdin outlived it.
enum Interruption {
    /// The signal sources, kept for the life of the process.
    private nonisolated(unsafe) static var sources: [any DispatchSourceSignal] = []

    /// Installs the handler for `command` (`run`, `test`). Call once, before the runs start.
    static func install(for command: String) {
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)  // delivered to the source below instead
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler {
                let stopped = InterruptCleanup.runAll()
                let name = sig == SIGINT ? "SIGINT" : "SIGTERM"
                let line = "\nnetsim \(command): interrupted by \(name); \(stopped == 0 ? "nothing was running" : "the runs in flight were stopped (their clients sent SIGTERM, their captures closed)"); no report was written\n"
                FileHandle.standardError.write(Data(line.utf8))
                fflush(nil)
                _exit(128 + sig)  // not exit(): no atexit handlers racing the event loops' threads
            }
            source.resume()
            sources.append(source)
        }
    }
}
