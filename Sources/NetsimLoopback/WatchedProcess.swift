import Foundation
import NetsimCore

/// A child process whose output and exit are events, for tests that run one (netsim itself, a
/// Python client, tshark).
///
/// Standard output and standard error are read as they arrive (each by a thread of its own) and
/// the exit by ``SpawnedProcess``'s waiting thread; async code waits for a line, for the end or
/// for the exit with a deadline, on ``Waitable``s, so no task blocks in `read(2)` or `waitpid(2)`
/// and no test sleeps to poll for the exit. Both pipes are always drained, so a
/// chatty child never blocks on a full pipe. A child still running when this is released is
/// sent SIGTERM.
public final class WatchedProcess: Sendable {
    /// How a child that ran to the end finished.
    public struct Result: Sendable {
        /// The exit status, or 128 + the signal that ended it.
        public var status: Int32
        public var standardOutput: String
        public var standardError: String
    }

    /// A wait that ran out: what the child had printed, for the test's message.
    public struct TimedOut: Error, CustomStringConvertible {
        public var description: String
    }

    public enum Stream: Sendable { case output, error }

    private let process: SpawnedProcess
    private let input: Pipe?
    private let output = PipeReader()
    private let errors = PipeReader()
    private let exitStatus = Waitable<Int32?>(nil)
    private let command: String

    /// Starts `executable` with `arguments` in `directory` (the current one when nil). With
    /// `standardInput`, ``write(_:)`` feeds the child; without, it reads an empty input.
    public init(_ executable: URL, _ arguments: [String], directory: URL? = nil, standardInput: Bool = false) throws {
        command = ([executable.lastPathComponent] + arguments).joined(separator: " ")
        let input = standardInput ? Pipe() : nil
        self.input = input
        process = try SpawnedProcess(executable.path, arguments, directory: directory?.path,
                                     standardInput: input.map { .pipe($0) } ?? .null,
                                     standardOutput: .pipe(output.pipe), standardError: .pipe(errors.pipe)) { [exitStatus] ending in
            exitStatus.update { $0 = ending.status }
        }
    }

    deinit {
        process.send(SIGTERM)
    }

    public var processIdentifier: Int32 { process.pid }

    /// Everything the child wrote to `stream` so far.
    public func text(_ stream: Stream) -> String { reader(stream).text }

    // MARK: Input

    public func write(_ text: String) throws {
        try input?.fileHandleForWriting.write(contentsOf: Data(text.utf8))
    }

    /// Closes the child's standard input: it reads EOF.
    public func closeInput() {
        try? input?.fileHandleForWriting.close()
    }

    // MARK: Waiting

    /// The next line of `stream` not yet taken; nil once the stream has ended with none left,
    /// or after `timeout`.
    public func nextLine(_ stream: Stream = .output, within timeout: Duration) async -> String? {
        await reader(stream).nextLine(within: timeout)
    }

    /// The first line of `stream` (taken or not) that satisfies `predicate`.
    public func line(_ stream: Stream, within timeout: Duration, where predicate: @escaping @Sendable (String) -> Bool) async throws -> String {
        guard let line = await reader(stream).firstLine(within: timeout, where: predicate) else {
            throw TimedOut(description: "\(command) printed no such line within \(timeout) (it exited: \(exitStatus.value.map(String.init) ?? "no")); it said:\n\(text(stream))")
        }
        return line
    }

    /// Calls `action` with the first line of `stream` (already read or still to come) that
    /// satisfies `predicate`, once, on the thread reading that stream, as soon as it is read.
    ///
    /// For a test that must act on a child's output at once whatever the load: a task awaiting
    /// ``line(_:within:where:)`` resumes on Swift's cooperative pool (two threads on a 2-core
    /// machine), which a busy suite can keep from it for seconds. CI sent a Ctrl-C meant for the
    /// middle of a 7 s run after the run had ended. `action` runs with no lock held: keep it quick.
    public func whenLine(_ stream: Stream, where predicate: @escaping @Sendable (String) -> Bool,
                         do action: @escaping @Sendable (String) -> Void) {
        reader(stream).whenLine(where: predicate, do: action)
    }

    /// The exit status once the child has exited; nil if it is still running after `timeout`
    /// (it is then sent SIGTERM).
    public func exit(within timeout: Duration) async -> Int32? {
        if let status = await exitStatus.wait(within: timeout, until: { $0 }) { return status }
        terminate()
        return nil
    }

    /// Waits for the exit and the end of both outputs. A child still running after `timeout` is
    /// sent SIGTERM and this throws ``TimedOut``.
    public func result(within timeout: Duration) async throws -> Result {
        let deadline = ContinuousClock.now + timeout
        guard let status = await exit(within: timeout),
              await output.end(within: deadline - .now), await errors.end(within: deadline - .now)
        else {
            throw TimedOut(description: "\(command) did not finish within \(timeout); it said:\n\(text(.output))\n\(text(.error))")
        }
        return Result(status: status, standardOutput: text(.output), standardError: text(.error))
    }

    /// SIGTERM (netsim stops gracefully on it).
    public func terminate() {
        process.send(SIGTERM)
    }

    private func reader(_ stream: Stream) -> PipeReader { stream == .output ? output : errors }
}

/// Reads one of a child's pipes as data arrives, into lines, on a thread of its own until EOF.
///
/// A plain thread in read(2), not `readabilityHandler`: on Linux the handler stops being called
/// partway through a large output once the child has exited (the last tens of kilobytes and the
/// EOF are never delivered), and a blocked read must not hold a thread of the cooperative pool.
private final class PipeReader: Sendable {
    struct State {
        var bytes: [UInt8] = []
        /// Complete lines not yet taken by ``nextLine(within:)``.
        var lines: [String] = []
        /// Complete lines ever read.
        var allLines: [String] = []
        var partial: [UInt8] = []
        var ended = false
        /// ``whenLine(where:do:)``'s watchers whose line has not come yet.
        var watchers: [(predicate: @Sendable (String) -> Bool, action: @Sendable (String) -> Void)] = []
        /// Watchers' actions whose line has come, for the reading thread to call outside the lock.
        var due: [() -> Void] = []

        mutating func append(_ chunk: ArraySlice<UInt8>) {
            bytes += chunk
            partial += chunk
            while let newline = partial.firstIndex(of: 0x0A) {
                addLine(partial[..<newline])
                partial.removeSubrange(...newline)
            }
        }

        /// The end: a last line without a newline is still a line.
        mutating func end() {
            if !partial.isEmpty { addLine(partial[...]) }
            partial = []
            ended = true
        }

        private mutating func addLine(_ bytes: ArraySlice<UInt8>) {
            let line = String(decoding: bytes, as: UTF8.self)
            lines.append(line)
            allLines.append(line)
            watchers.removeAll { watcher in
                guard watcher.predicate(line) else { return false }
                due.append { watcher.action(line) }
                return true
            }
        }

        mutating func takeDue() -> [() -> Void] {
            defer { due = [] }
            return due
        }
    }

    let pipe = Pipe()
    private let state = Waitable(State())

    init() {
        let (state, handle) = (self.state, pipe.fileHandleForReading)
        Thread {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(handle.fileDescriptor, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                var due: [() -> Void] = []
                state.update {
                    $0.append(buffer[..<count])
                    due = $0.takeDue()
                }
                due.forEach { $0() }
            }
            state.update { $0.end() }
        }.start()
    }

    var text: String { String(decoding: state.value.bytes, as: UTF8.self) }

    func nextLine(within timeout: Duration) async -> String? {
        await state.wait(within: timeout) { state -> String?? in
            if !state.lines.isEmpty { return .some(state.lines.removeFirst()) }
            return state.ended ? .some(nil) : nil
        } ?? nil
    }

    func firstLine(within timeout: Duration, where predicate: @escaping @Sendable (String) -> Bool) async -> String? {
        await state.wait(within: timeout) { state -> String?? in
            if let line = state.allLines.first(where: predicate) { return .some(line) }
            return state.ended ? .some(nil) : nil
        } ?? nil
    }

    func whenLine(where predicate: @escaping @Sendable (String) -> Bool, do action: @escaping @Sendable (String) -> Void) {
        var already: String?
        state.update { state in
            if let line = state.allLines.first(where: predicate) {
                already = line
            } else {
                state.watchers.append((predicate, action))
            }
        }
        if let already { action(already) }
    }

    func end(within timeout: Duration) async -> Bool {
        await state.wait(within: timeout) { $0.ended ? true : nil } ?? false
    }
}
