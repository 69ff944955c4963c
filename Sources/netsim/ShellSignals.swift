import Foundation
import NetsimPacket
#if canImport(Glibc)
import Glibc
#endif

#if canImport(Glibc)
/// SIGINT, SIGTERM and SIGHUP while a shell runs: netsim must live to clean up, so it catches
/// them and ends the command instead, then removes the namespace as on a normal exit.
///
/// Ctrl-C on a terminal reaches the command too (same foreground process group): netsim then
/// leaves it to the command, so an interactive shell inside survives Ctrl-C as any shell does.
/// A SIGINT not from the terminal, SIGTERM and SIGHUP are passed on, and a command still running
/// 2 s later is killed, with every process in its namespace. Caught from the moment this is
/// made; one that arrives before the command starts is passed on as soon as it does. They come
/// through ``SignalPipe``, which loses none.
final class ShellSignals: @unchecked Sendable {
    private let lock = NSLock()
    private var pipe: SignalPipe?
    private var shell: PacketShell?
    private var pending: Int32?
    private var passed = false
    private let interactive = isatty(STDIN_FILENO) == 1

    /// Whether a stop signal was passed to the command: once it has ended, whatever it left in
    /// its namespace is killed too (QA 66: a command that died at once of SIGTERM left its
    /// background children running, in a namespace no sweep could find once it was unnamed).
    var stopPassed: Bool { lock.withLock { passed } }

    init() {
        pipe = SignalPipe(signals: [SIGINT, SIGTERM, SIGHUP]) { [weak self] sig in self?.received(sig) }
    }

    /// From now on, signals go to `shell`'s command (and any that came before, now).
    func forward(to shell: PacketShell) {
        let waiting = lock.withLock { () -> Int32? in
            self.shell = shell
            defer { pending = nil }
            return pending
        }
        if let waiting { pass(waiting, to: shell) }
    }

    private func received(_ sig: Int32) {
        if sig == SIGINT, interactive { return }
        let target = lock.withLock { () -> PacketShell? in
            if shell == nil { pending = sig }
            return shell
        }
        if let target { pass(sig, to: target) }
    }

    private func pass(_ sig: Int32, to shell: PacketShell) {
        lock.withLock { passed = true }
        shell.signal(sig)
        DispatchQueue.global().asyncAfter(deadline: .now() + 2) { shell.killAll() }
    }
}
#endif
