import NetsimCore
import NetsimRelay
import ArgumentParser
import Foundation
import Logging
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Status lines go to standard error so standard output stays clean for `--events -`. Under
/// `--log-format json` each is one JSON log record instead (label `netsim.status`, the line as
/// its message), so that every line on standard error parses; they are written whatever the
/// `--log-level`, as the text lines are.
func printStatus(_ line: String, level: Logger.Level = .notice) {
    guard StatusLines.json else {
        StandardStream.error.write(line + "\n")
        return
    }
    let message = line.trimmingCharacters(in: .whitespaces)
    StandardStream.error.write(JSONLogHandler.line(
        time: Date(), level: level, label: "netsim.status", message: message, metadata: [:], source: "netsim") + "\n")
}

/// How ``printStatus(_:level:)`` writes.
enum StatusLines {
    /// Set once by `LoggingOptions.bootstrap()`, before the command starts anything concurrent.
    nonisolated(unsafe) static var json = false
}

/// The banner's last line for a command that runs until stopped: the seed its random decisions
/// come from (to run them again), and how it ends.
func seedAndStopLine(seed: UInt64, duration: Duration?) -> String {
    "  seed: \(seed)" + (duration.map { "; stopping after \($0.compactDescription)" } ?? "; Ctrl-C to stop")
}

/// A warning nobody can miss: framed, and in bold red on a terminal (one record in JSON).
func warnLoudly(_ message: String) {
    guard !StatusLines.json else { return printStatus("WARNING: \(message)", level: .warning) }
    let tty = isatty(STDERR_FILENO) == 1
    let bar = String(repeating: "!", count: 78)
    let body = "\(bar)\nWARNING: \(message)\n\(bar)"
    printStatus(tty ? "\u{1B}[1;31m\(body)\u{1B}[0m" : body)
}

/// The event log of a long-running command (`relay`, `proxy`): nothing kept in memory, every
/// event streamed as a JSON line to `--events FILE`, or to standard output with `-`. With
/// `lineByLine`, a file gets each line as it happens (for `tail -f`, at a write per event).
func streamingEventLog(to events: String?, lineByLine: Bool = false, stop: StopSignal? = nil) throws -> EventLog {
    let log = EventLog(retention: 0)
    if let sink = try eventLines(to: events, lineByLine: lineByLine, stop: stop) { log.addSink(sink) }
    return log
}

/// `--events FILE|-` as a sink of JSON lines (nil without the option); standard output is
/// written line by line. A FIFO is waited on for a reader, a `stop` ending the wait.
func eventLines(to events: String?, lineByLine: Bool = false, stop: StopSignal? = nil) throws -> JSONLinesEventSink? {
    switch events {
    case nil:
        return nil
    case "-":
        return JSONLinesEventSink(handle: .standardOutput, flushThreshold: 0, onFailure: { eventsLost("-", $0) })
    case let path?:
        let threshold = lineByLine ? 0 : 64 * 1024
        if let fifo = try openWhenRead(path, option: "--events", stop: stop) {
            return JSONLinesEventSink(handle: FileHandle(fileDescriptor: fifo, closeOnDealloc: false), flushThreshold: threshold,
                                      closeOnDeinit: true, onFailure: { eventsLost(path, $0) })
        }
        do {
            return try JSONLinesEventSink(path: path, flushThreshold: threshold, onFailure: { eventsLost(path, $0) })
        } catch {
            throw ValidationError("cannot write events to \(path): \(error.posixReason)")
        }
    }
}

/// When `path` is a FIFO: its descriptor for writing, once a reader has opened it; nil for
/// anything else. open(2) blocks until then, before the command's banner and deaf to its
/// Ctrl-C (QA 67: only a second one ended it, as a forced stop): the wait is said, and made
/// of non-blocking tries, 10 a second, which a stop ends (exit 128 + the signal, as tcpdump
/// `-w FIFO` ends on its first Ctrl-C).
func openWhenRead(_ path: String, option: String, stop: StopSignal?) throws -> Int32? {
    var status = stat()
    guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFIFO else { return nil }
    var said = false
    while true {
        let descriptor = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        if descriptor >= 0 {
            // Writes block again when the reader is slow, as a file's would.
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
            return descriptor
        }
        guard errno == ENXIO else { throw ValidationError("\(option) \(path): \(OutputFile.reason(errno))") }
        if let signal = stop?.received {
            printStatus("\(option) \(path): \(signalName(signal)) while waiting for a reader; nothing started")
            throw ExitCode(128 + signal)
        }
        if !said {
            printStatus("\(option) \(path): a FIFO; waiting for a reader to open it (Ctrl-C to give up)")
            said = true
        }
        usleep(100_000)
    }
}

/// Says on standard error, once, that the event log stopped being written (QA 63: `--events - |
/// head -2` lost every later event without a word).
private func eventsLost(_ path: String, _ reason: String) {
    let place = path == "-" ? "standard output" : path
    FileHandle.standardError.write(Data("netsim: --events \(path): cannot write to \(place) (\(reason)); the events from now on are not written\n".utf8))
}

/// Flushes `log` every `interval` until cancelled, for commands that run until stopped: their
/// `--events FILE` is readable while they run (`tail -f`), and a `kill -9` loses at most the last
/// second. Before, a file sink was written every 64 KiB or at the end, so a relay's file stayed
/// empty for its whole run and a hard kill lost all of it.
func flushPeriodically(_ log: EventLog, every interval: Duration = .seconds(1)) -> Task<Void, Never> {
    flushPeriodically(every: interval) { log.flush() }
}

/// ``flushPeriodically(_:every:)`` for what flushes several logs (`netsim serve`'s proxies).
func flushPeriodically(every interval: Duration = .seconds(1), _ flush: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
    Task.detached {
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)  // a command's wall-clock cadence, not a test's wait
            await flush()
        }
    }
}

/// An error at run time (not a usage error): printed as `Error: …`, exit code 1.
struct RuntimeError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// SIGINT, SIGTERM and SIGHUP, caught from the moment this is made: a command makes one before it
/// announces itself, so a signal sent right after the announcement is never lost. The first
/// signal ends ``wait(duration:)`` and the command stops cleanly (closes connections, writes the
/// rest of its event log and capture). A signal while that is under way (the second Ctrl-C, or
/// the first after `--duration` ran out) says so and exits at once with 128 + the signal, as a
/// second Ctrl-C does in most servers: a stop that hangs (an event file on a stuck disk) never
/// traps the user. The same signal again within 100 ms is the first one repeated, not a
/// second Ctrl-C: coreutils `timeout` signals the command and then its whole process group, so
/// `timeout -s INT 10 netsim relay …` got SIGINT twice at once and exited without its clean stop
/// (no `closed` events, no `listener_closed`).
///
/// The signals come through ``SignalPipe``; a Dispatch signal source (with the signal ignored)
/// could lose one.
final class StopSignal: @unchecked Sendable {
    private let lock = NSLock()
    private var fired = false
    private var continuation: CheckedContinuation<Void, Never>?
    private var pipe: SignalPipe?
    /// The signal that began the stop, and when it came.
    private var first: (signal: Int32, at: ContinuousClock.Instant)?

    /// How soon the same signal again counts as the first one repeated (a person's second Ctrl-C
    /// comes later than this): 100 ms unless a test says otherwise.
    private let sameStop: Duration

    /// - Parameters:
    ///   - signals: what stops the command: SIGINT, SIGTERM and SIGHUP (the terminal closed: its
    ///     default action cut a relay's capture mid-packet); tests use others.
    ///   - command: the name the forced exit's line gives, `netsim relay`.
    ///   - sameStop: how soon the same signal again is the first one repeated.
    ///   - forceExit: what a signal while stopping does; by default, exit at once.
    init(signals: [Int32] = [SIGINT, SIGTERM, SIGHUP], command: String = "netsim", sameStop: Duration = .milliseconds(100),
         forceExit: @escaping @Sendable (Int32) -> Void = StopSignal.exitAtOnce) {
        self.sameStop = sameStop
        pipe = SignalPipe(signals: signals) { [weak self] sig in
            guard let self else { return }
            let (stopping, repeated) = self.lock.withLock { () -> (Bool, Bool) in
                let now = ContinuousClock.now
                if let first = self.first, first.signal == sig, now - first.at < self.sameStop { return (true, true) }
                if !self.fired { self.first = (sig, now) }
                return (self.fired, false)
            }
            if repeated { return }
            if stopping {
                printStatus("\n\(command): \(signalName(sig)) while stopping; stopping at once, without closing cleanly")
                forceExit(sig)
            } else {
                self.fire()
            }
        }
    }

    /// The default for a signal while stopping: `_exit(128 + sig)`, as a shell reports a death by it.
    static let exitAtOnce: @Sendable (Int32) -> Void = { sig in
        fflush(nil)
        _exit(128 + sig)
    }

    /// The signal that asked for the stop, once one has (nil before, and for a `--duration`'s end).
    var received: Int32? { lock.withLock { fired ? first?.signal : nil } }

    /// Returns when a signal arrives (or arrived already), or after `duration`.
    func wait(duration: Duration?) async {
        if let duration {
            DispatchQueue.global().asyncAfter(deadline: .now() + duration.seconds) { [weak self] in self?.fire() }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = lock.withLock { () -> Bool in
                if fired { return true }
                self.continuation = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    private func fire() {
        let waiting = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            fired = true
            defer { continuation = nil }
            return continuation
        }
        waiting?.resume()
    }
}

/// Fails as the listener would (`--listen ADDRESS: cannot listen: address already in use`)
/// before a command truncates the files it writes: a relay or proxy that cannot start leaves
/// the last run's `--events` and `--pcap` as they were.
func ensureCanListen(_ listen: Endpoint) throws {
    do { try PortHold.probe(listen) } catch {
        throw RuntimeError("--listen \(listen): cannot listen: \(SocketFailureText.describe(error))")
    }
}

/// The status line with a listener's connection limit (`relay`, `proxy`): the default says the
/// open-file limit it comes from; a `--max-connections` beyond what that limit leaves room for
/// says so, since past it accepts fail (`listener_paused`) and clients whose upstream socket
/// cannot be opened are closed.
func printConnectionLimit(_ limit: Int, explicit: Int?, splice: Bool = false) {
    let files = OpenFileLimit.current.soft
    guard explicit != nil else { return printStatus("  connections: at most \(limit) (open-file limit \(files))") }
    let room = Relay.defaultConnectionLimit(splice: splice)
    guard limit > room else { return printStatus("  connections: at most \(limit)") }
    printStatus("  connections: at most \(limit), but the open-file limit \(files) leaves room for \(room)"
                + " (\(Relay.descriptorsPerConnection(splice: splice)) descriptors each, after \(Relay.reservedDescriptors) for the process):"
                + " past it, accepts fail and clients are closed (raise ulimit -n, or drop --max-connections)", level: .warning)
}
