#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CNetsimSpawn
import Foundation

/// A child process started with posix_spawn(3), for every program netsim runs (exec clients,
/// a shell's command, `ip`, the benchmark's relays) and the tests run.
///
/// Why not Foundation's `Process` (swift-corelibs-foundation, Swift 6.3.1):
/// - `run()` can crash the parent. It lists /proc/self/fd to find the descriptors to close and
///   copies each entry's whole 256-byte name, past the end of readdir's buffer; with many
///   descriptors open the copy runs into an unmapped page (SIGSEGV; swift-corelibs-foundation
///   PR #5472, fixed after this toolchain). netsim and its tests hold many descriptors (a relay's
///   sockets, a suite's servers) while they start children, and a test run crashed this way here.
/// - The child inherits the signal mask of the thread that starts it. Dispatch's threads block
///   most signals, so a client started from one never saw SIGTERM (measured: SigBlk
///   fffffffe3bfbea27 in the child); and netsim ignores SIGPIPE, which a child would inherit too.
///
/// Here the kernel closes every descriptor but the three standard ones in the child (glibc's
/// closefrom action, close_range(2); no directory listing), the child starts with an empty mask
/// and every signal at its default, and a thread of its own waits for the exit. The process
/// group is inherited, so a terminal's Ctrl-C reaches the child too, unless the child is to lead
/// a group of its own (`ownGroup`: an exec client, whose descendants netsim ends with it).
public final class SpawnedProcess: Sendable {
    /// What the child's standard input, output or error is.
    public enum Stream: Sendable {
        /// netsim's own.
        case inherit
        /// /dev/null.
        case null
        /// The child's end of `pipe` (the read end for standard input, the write end for output);
        /// netsim closes its copy of that end once the child runs, so a reader sees EOF when the
        /// child exits.
        case pipe(Pipe)
    }

    /// How the child ended.
    public enum Termination: Sendable, Equatable, CustomStringConvertible {
        case exited(Int32)
        case signalled(Int32)

        /// The status a shell reports: the exit status, or 128 + the signal.
        public var status: Int32 {
            switch self {
            case .exited(let status): status
            case .signalled(let signal): 128 + signal
            }
        }

        /// `exit 3`, `killed by signal 11 (SIGSEGV)`: the name says a crash from an OOM kill
        /// (SIGKILL) or a Ctrl-C (SIGINT) without a table at hand.
        public var description: String {
            switch self {
            case .exited(let status): "exit \(status)"
            case .signalled(let signal): "killed by signal \(signal)" + (Self.signalNames[signal].map { " (\($0))" } ?? "")
            }
        }

        /// The standard signals by this system's numbers (real-time ones have no name here).
        static let signalNames: [Int32: String] = [
            SIGHUP: "SIGHUP", SIGINT: "SIGINT", SIGQUIT: "SIGQUIT", SIGILL: "SIGILL", SIGTRAP: "SIGTRAP", SIGABRT: "SIGABRT",
            SIGBUS: "SIGBUS", SIGFPE: "SIGFPE", SIGKILL: "SIGKILL", SIGUSR1: "SIGUSR1", SIGSEGV: "SIGSEGV", SIGUSR2: "SIGUSR2",
            SIGPIPE: "SIGPIPE", SIGALRM: "SIGALRM", SIGTERM: "SIGTERM", SIGCHLD: "SIGCHLD", SIGCONT: "SIGCONT", SIGSTOP: "SIGSTOP",
            SIGTSTP: "SIGTSTP", SIGTTIN: "SIGTTIN", SIGTTOU: "SIGTTOU", SIGURG: "SIGURG", SIGXCPU: "SIGXCPU", SIGXFSZ: "SIGXFSZ",
            SIGVTALRM: "SIGVTALRM", SIGPROF: "SIGPROF", SIGWINCH: "SIGWINCH", SIGIO: "SIGIO", SIGSYS: "SIGSYS",
        ]
    }

    /// posix_spawn refused (the program does not exist or is not executable, …).
    public struct SpawnError: Error, CustomStringConvertible {
        public let program: String
        public let code: Int32
        public var description: String { "cannot run \(program): \(String(cString: strerror(code)))" }
    }

    public let pid: pid_t
    /// The child leads a process group of its own, whose id is its pid.
    public let leadsGroup: Bool
    private let ending = NSCondition()
    /// Set once, under `ending`, before the child is reaped: a signal sent while it is nil cannot
    /// reach another process that took over the pid.
    private nonisolated(unsafe) var result: Termination?

    /// Starts `executable` (a path, or a name looked up in PATH with `searchPath`) with
    /// `arguments` (without the program's own name), `environment` (netsim's when nil) and
    /// `directory` (netsim's when nil). `onExit` runs on the waiting thread once the child has
    /// exited and been reaped. With `ownGroup` the child leads a new process group
    /// (``signalGroup(_:)``).
    public init(_ executable: String, _ arguments: [String], searchPath: Bool = false,
                environment: [String: String]? = nil, directory: String? = nil, ownGroup: Bool = false,
                standardInput: Stream = .null, standardOutput: Stream = .null, standardError: Stream = .null,
                onExit: (@Sendable (Termination) -> Void)? = nil) throws {
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        guard null >= 0 else { throw SpawnError(program: "/dev/null for \(executable)", code: errno) }
        defer { close(null) }
        func descriptor(_ stream: Stream, reads: Bool) -> Int32 {
            switch stream {
            case .inherit: -1
            case .null: null
            case .pipe(let pipe): (reads ? pipe.fileHandleForReading : pipe.fileHandleForWriting).fileDescriptor
            }
        }
        let stdio = [descriptor(standardInput, reads: true), descriptor(standardOutput, reads: false),
                     descriptor(standardError, reads: false)]
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid = pid_t()
        // ETXTBSY: a script written just before (a test's, a user's) is still open for writing in
        // a child another thread is starting, between its clone and its exec, which closes it.
        // That lasts microseconds: try again, every 10 ms for 1 s at most (a CI run failed on it
        // once). A blocking wait, as the spawn itself is, and only while the file is busy.
        var code: Int32 = ETXTBSY
        for attempt in 0..<100 where code == ETXTBSY {
            if attempt > 0 { usleep(10_000) }
            code = stdio.withUnsafeBufferPointer { stdio in
                cnetsim_spawn(&pid, executable, searchPath ? 1 : 0, argv, envp, directory, stdio.baseAddress, ownGroup ? 1 : 0)
            }
        }
        guard code == 0 else { throw SpawnError(program: executable, code: code) }
        self.pid = pid
        self.leadsGroup = ownGroup
        // The child has its own copies now; the parent's would keep a pipe open after it exits.
        if case .pipe(let pipe) = standardInput { try? pipe.fileHandleForReading.close() }
        for stream in [standardOutput, standardError] {
            if case .pipe(let pipe) = stream { try? pipe.fileHandleForWriting.close() }
        }
        Thread { [self] in awaitExit(onExit) }.start()
    }

    /// How the child ended; nil while it runs.
    public var termination: Termination? {
        ending.lock()
        defer { ending.unlock() }
        return result
    }

    public var isRunning: Bool { termination == nil }

    /// Blocks until the child has exited, at most `timeout` (forever when nil); nil if it still runs.
    @discardableResult
    public func waitForExit(timeout: Duration? = nil) -> Termination? {
        let deadline = timeout.map { Date(timeIntervalSinceNow: $0.seconds) }
        ending.lock()
        defer { ending.unlock() }
        while result == nil {
            if let deadline {
                guard ending.wait(until: deadline) else { break }
            } else {
                ending.wait()
            }
        }
        return result
    }

    /// Waits until the child has exited, at most `timeout`; nil if it still runs. The wait is a
    /// thread's, not one of Swift's cooperative pool (two on a small machine).
    @discardableResult
    public func exit(within timeout: Duration) async -> Termination? {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: self.waitForExit(timeout: timeout)) }.start()
        }
    }

    /// Sends `signal`, unless the child has exited (its pid may be another process's by then).
    public func send(_ signal: Int32) {
        ending.lock()
        defer { ending.unlock() }
        if result == nil { kill(pid, signal) }
    }

    /// How the child ended, as `waitid` reported it.
    private static func termination(_ info: siginfo_t) -> Termination {
        #if canImport(Glibc)
        let status = info._sifields._sigchld.si_status
        #else
        let status = info.si_status
        #endif
        return info.si_code == CLD_EXITED ? .exited(status) : .signalled(status)
    }

    private func awaitExit(_ onExit: (@Sendable (Termination) -> Void)?) {
        // Wait without reaping, so the pid stays this child's until `result` says it has ended.
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0, errno == EINTR {}
        var status: Int32 = 0
        ending.lock()
        var reaped = waitpid(pid, &status, 0)
        while reaped < 0, errno == EINTR { reaped = waitpid(pid, &status, 0) }
        let termination: Termination
        if reaped == pid {
            let signal = status & 0x7F
            termination = signal == 0 ? .exited((status >> 8) & 0xFF) : .signalled(signal)
        } else {
            // Reaped by someone else (SIGCHLD ignored, a waitpid(-1) elsewhere): the status is
            // the one waitid saw, never a made-up "exit 0".
            termination = Self.termination(info)
        }
        result = termination
        ending.broadcast()
        ending.unlock()
        onExit?(termination)
    }
}
