#if canImport(Glibc)
import CNetsimPacket
import Foundation
import Glibc

/// The command a shell runs, started with posix_spawn so that it gets a clean signal state.
///
/// Foundation's `Process` passes on the signal mask of the thread that starts it, and Dispatch's
/// threads block most signals: a command started that way never sees SIGTERM (measured here:
/// SigBlk fffffffe3bfbea27 in the child). This one resets the mask and every handler to the
/// default, as a shell does for the commands it runs. Standard streams and the process group are
/// inherited, so the command reads the terminal and Ctrl-C reaches it; no other descriptor is.
final class CommandProcess: @unchecked Sendable {
    let pid: pid_t
    private let lock = NSLock()
    private var reaped = false

    /// Starts `arguments[0]` (looked up in PATH) with `arguments` and `environment`.
    init(_ arguments: [String], environment: [String: String]) throws {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var all = sigset_t()
        sigfillset(&all)
        sigdelset(&all, SIGKILL)
        sigdelset(&all, SIGSTOP)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        // Only standard input, output and error: any other descriptor netsim inherited (a parent's
        // pipe or socket that tells it when netsim exits) must not be held open by the command.
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        _ = cnetsim_spawn_closefrom(&actions, 3)

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid = pid_t()
        let result = posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, envp)
        guard result == 0 else { throw PacketPathError.system("cannot run \(arguments[0])", result) }
        self.pid = pid
    }

    /// Blocks until the command exits: its status, or 128 + the signal that ended it.
    func waitForExit() -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { break }
        }
        lock.withLock { reaped = true }
        let signal = status & 0x7F
        return signal == 0 ? (status >> 8) & 0xFF : 128 + signal
    }

    /// Sends `signal` unless the command has been reaped (its pid may belong to another process by then).
    func send(_ signal: Int32) {
        lock.withLock {
            if !reaped { kill(pid, signal) }
        }
    }
}
#endif
