import Foundation
import NetsimCore
import NetsimHTTP
import NetsimScenario
import NIOConcurrencyHelpers

/// Drives any program over JSON lines on stdin/stdout (docs/drivers.md, the lines as types in
/// ``ExecCommand`` and ``ExecReply``). The process lives for the whole run, so its connection
/// pool persists across requests.
public final class ExecDriver: ClientDriver {
    /// Everything the reader threads, the requests and the exit handler share.
    private struct State {
        var name: String
        /// Requests sent and not answered yet.
        var waiting: [Int: CheckedContinuation<DriverResponse, Never>] = [:]
        /// Answers that came before their request waited (or a late timeout's).
        var early: [Int: DriverResponse] = [:]
        var exited = false
        var greeted = false
        /// Why the hello cannot be accepted (a newer protocol, or a line that does not decode),
        /// once it came.
        var refused: String?
        /// The hello as the client said it.
        var hello: ExecHello?
        /// netsim ended the process because it did not exit after stdin closed: with SIGTERM, or
        /// with SIGKILL when SIGTERM did not end it either.
        var ended: Int32?
        /// netsim closed the client's stdin (``shutdown()``): the end the protocol asks for.
        var stdinClosed = false
        /// The client ended (its stdout closed) while its stdin was still open.
        var endedEarly = false
        /// The client's stderr reached its end: its log is complete.
        var logComplete = false
    }

    private let state: NIOLockedValueBox<State>
    /// A value each time the client greets, is refused, exits or ends its stderr: what
    /// ``ready(timeout:)`` waits on.
    private let changes = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    /// The client's stderr, and netsim's notes on lines that broke the protocol.
    private let clientLog = ClientLog()
    private let process: SpawnedProcess
    private let input = Pipe()
    private let output = Pipe()
    private let errors = Pipe()
    /// Longest a request may stay unanswered before the driver reports a timeout itself.
    private let answerDeadline: Duration
    /// SIGTERM for the client if netsim is interrupted before ``shutdown()`` (``InterruptCleanup``).
    private let stopOnInterrupt: UInt64

    public var name: String { state.withLockedValue { $0.name } }
    /// `exec: `, after the user's label when there is one; nothing for a built-in driver.
    private let namePrefix: String

    /// Starts `command` with `client`'s settings as its first input line.
    /// - Parameter environment: added to netsim's own environment for the client (a TLS run's CA).
    /// - Parameter answerDeadline: how long a request may stay unanswered (default: three times
    ///   the client's timeout, plus 10 s).
    /// - Parameter label: the user's name for the client (`--client exec:NAME=…`), put before
    ///   what the client calls itself so reports tell it from a built-in column.
    /// - Parameter builtin: the in-process driver this process serves (`netsim exec-client`
    ///   inside a packet link's namespace): the run reports it by the name it greets with, as a
    ///   relay run of the same driver does, not as `exec: …`.
    public init(command: [String], client: ClientSpec, workingDirectory: String? = nil, environment: [String: String] = [:],
                answerDeadline: Duration? = nil, label: String? = nil, builtin: String? = nil) throws {
        guard !command.isEmpty else { throw RunnerError.invalid("the exec driver needs a command") }
        Self.ignoreSIGPIPE
        let prefix = builtin != nil ? "" : (label.map { "\($0): " } ?? "") + "exec: "
        self.namePrefix = prefix
        let state = NIOLockedValueBox(State(name: builtin ?? prefix + command.joined(separator: " ")))
        self.state = state
        let changed = changes.continuation
        self.answerDeadline = answerDeadline ?? (client.timeout ?? .seconds(30)) * 3 + .seconds(10)
        // Started under InterruptCleanup: an interrupted run never leaves a client started
        // after its cleanup ran.
        let started = NIOLockedValueBox<SpawnedProcess?>(nil)
        let (input, output, errors) = (self.input, self.output, self.errors)
        do {
            (process, stopOnInterrupt) = try InterruptCleanup.create(.execClient, undo: { started.withLockedValue { $0 }.map(Self.stopAtOnce) }) {
                // A group of its own: what it starts (a wrapper script's real client) ends with it.
                let process = try SpawnedProcess("/usr/bin/env", command,
                                                 environment: environment.isEmpty ? nil : ProcessInfo.processInfo.environment.merging(environment) { _, added in added },
                                                 directory: workingDirectory, ownGroup: true,
                                                 standardInput: .pipe(input), standardOutput: .pipe(output), standardError: .pipe(errors)) { _ in
                    Self.processExited(state, changed)
                }
                started.withLockedValue { $0 = process }
                return process
            }
        } catch {
            throw RunnerError.invalid("cannot start the exec client \(command.joined(separator: " ")): \(error)")
        }
        startReading()
        do {
            try send(.config(ExecConfig(client)))
        } catch {
            // A client that exited at once: `ready` reports it with its stderr.
            // Foundation's NSError for the broken pipe says nothing more than this.
            clientLog.note("[netsim] the exec client did not take its config line (its stdin is closed: it had exited)")
        }
    }

    /// An interrupted run's client and its process group: SIGTERM, and SIGKILL if it is still
    /// there 1 s later (one that ignored SIGTERM outlived netsim).
    private static func stopAtOnce(_ process: SpawnedProcess) {
        process.signalGroup(SIGTERM)
        if process.waitForExit(timeout: .seconds(1)) == nil { process.signalGroup(SIGKILL) }
        if !process.groupMembers().isEmpty { process.signalGroup(SIGKILL) }
    }

    /// A write into the pipe of a client that has exited must fail with EPIPE, not kill netsim
    /// with SIGPIPE (a pipe has no MSG_NOSIGNAL); ignored once, for the whole process.
    private static let ignoreSIGPIPE: Void = { signal(SIGPIPE, SIG_IGN) }()

    /// The start of the message of a request the client never answered (``perform(_:)``'s own
    /// timeout, not one the client reported).
    static let unanswered = "the exec client did not answer within "

    /// True when `response` is netsim's: the client never answered.
    public static func isUnanswered(_ response: DriverResponse) -> Bool {
        response.error == .timeout && response.errorMessage?.hasPrefix(unanswered) == true
    }

    /// Whose words begin every answer netsim makes in the client's place (it exited, broke the
    /// protocol, could not be written to): ``isNetsims(_:)`` tells them from the client's own.
    static let standIn = "netsim: "

    /// True when netsim made `response` because the client gave none: a crashed client's
    /// requests fail with kind `other`, which a check expecting `other` must not count as the
    /// client's classification.
    public static func isNetsims(_ response: DriverResponse) -> Bool {
        isUnanswered(response) || response.errorMessage?.hasPrefix(standIn) == true
    }

    public func perform(_ request: DriverRequest) async throws -> DriverResponse {
        let deadline = answerDeadline
        let id = request.id
        let timer = Task { [weak self] in
            try await Task.sleep(for: deadline)
            self?.answer(id, DriverResponse(error: .timeout, errorMessage: Self.unanswered + deadline.compactDescription))
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let ready = state.withLockedValue { state -> DriverResponse? in
                if let response = state.early.removeValue(forKey: id) { return response }
                if state.exited { return DriverResponse(error: .other, errorMessage: Self.standIn + "the exec client has exited") }
                state.waiting[id] = continuation
                return nil
            }
            if let ready {
                continuation.resume(returning: ready)
                return
            }
            do {
                try send(.request(ExecRequest(request)))
            } catch {
                answer(id, DriverResponse(error: .other, errorMessage: Self.standIn + "cannot write to the exec client: \(error)"))
            }
        }
    }

    /// The protocol's first line from the client is `hello`: it means the client has started
    /// and can take requests. Scenario time starts only then, so a slow interpreter start does
    /// not eat into the timeline.
    public func ready(timeout: Duration) async throws {
        let deadline = ContinuousClock.now + timeout
        // The deadline, and a second for the last of stderr once the client has gone, are news too.
        let changed = changes.continuation
        func wake(at instant: ContinuousClock.Instant) -> Task<Void, any Error> {
            Task { try await Task.sleep(until: instant); changed.yield() }
        }
        var timers = [wake(at: deadline)]
        defer { timers.forEach { $0.cancel() } }
        var drained: ContinuousClock.Instant?
        var iterator = changes.stream.makeAsyncIterator()
        while true {
            let (hello, gone, refused, logComplete) = state.withLockedValue { ($0.greeted, $0.exited, $0.refused, $0.logComplete) }
            // The client's fault, not the scenario's: exit 1 as any client that cannot run
            // (it was 2, which says the scenario is invalid; `netsim test` counted it an error).
            if let refused { throw RunnerError.failed(refused) }
            if hello { return }
            if gone {
                // Its last words are its stderr: wait (briefly) for the reader to see its end.
                let end = drained ?? ContinuousClock.now + .seconds(1)
                if drained == nil {
                    drained = end
                    timers.append(wake(at: end))
                }
                if (logComplete && process.termination != nil) || ContinuousClock.now >= end {
                    let log = clientLog.contents
                    // How it ended, when it has been reaped by now (QA 62: exit 3 was not said).
                    let how = process.termination.map { " (\($0))" } ?? ""
                    throw RunnerError.failed("the exec client exited\(how) before saying hello" + (MissingDependencyHint.hint(in: log).map { " (\($0))" } ?? "") + "\n" + log)
                }
            }
            if ContinuousClock.now >= deadline { break }
            guard await iterator.next() != nil else { break }
        }
        // What it said instead (a line that is not the protocol's is noted in its log) is the clue.
        let said = clientLog.contents
        throw RunnerError.failed("the exec client did not say hello within \(timeout.compactDescription) (docs/drivers.md: the first line a client writes is {\"type\":\"hello\",…})" + (said.isEmpty ? "" : "; its output:\n" + said))
    }

    public func shutdown() async {
        defer { InterruptCleanup.unregister(stopOnInterrupt) }
        let greeted = state.withLockedValue { state in
            state.stdinClosed = true
            return state.greeted && state.refused == nil
        }
        try? input.fileHandleForWriting.close()
        for signal in [SIGTERM, SIGKILL] {
            // A client never greeted (its hello refused, or none in time) has no answers to finish:
            // a quarter second to exit, not three (QA 62: a refused hello cost 3 s more).
            let grace: Duration = signal == SIGKILL ? .seconds(2) : greeted ? .seconds(3) : .milliseconds(250)
            if await process.exit(within: grace) != nil { break }
            state.withLockedValue { $0.ended = signal }
            process.signalGroup(signal)  // the group: a wrapper script's real client too
        }
        await process.exit(within: .seconds(2))
        // What it started and left running in its group (a helper, a wrapper's client that
        // ignored SIGTERM) is ended too, and said: in CI it held ports and CPU after the run.
        if let (members, signal) = await process.endGroup() {
            let pids = members.filter { $0 != 0 }.map(String.init).joined(separator: ", ")
            clientLog.note("[netsim] the exec client left \(pids.isEmpty ? "processes" : "process\(members.count == 1 ? "" : "es") \(pids)") running in its process group when it ended; "
                + "netsim \(signal == SIGKILL ? "killed" : "terminated") \(members.count == 1 ? "it" : "them") (\(signal == SIGKILL ? "SIGKILL, after SIGTERM" : "SIGTERM"))")
        }
    }

    /// The client's `hello` line, once it came (for `netsim driver-check`).
    var hello: ExecHello? { state.withLockedValue { $0.hello } }

    /// How the process ended after ``shutdown()``: nil while it runs; `exit 0` is what the
    /// protocol asks (docs/drivers.md, "End").
    var ending: String? {
        guard let termination = process.termination else { return nil }
        let (ended, greeted) = state.withLockedValue { ($0.ended, $0.greeted && $0.refused == nil) }
        let grace = greeted ? "3 s" : "0.25 s (netsim took no hello from it)"
        switch ended {
        case SIGTERM: return "did not exit within \(grace) after stdin closed; netsim terminated it (SIGTERM)"
        case SIGKILL: return "did not exit within \(grace) after stdin closed, nor 2 s after SIGTERM; netsim killed it (SIGKILL)"
        default: break
        }
        return termination.description
    }

    public var log: String { get async { clientLog.contents } }

    public var endProblem: String? {
        get async {
            let ending = ending ?? "still running after SIGKILL"
            if ending != "exit 0" { return ending }
            // QA 37: a client that quit with status 0 mid-run passed.
            return state.withLockedValue { $0.endedEarly } ? "exit 0 before its stdin closed, while the run could still send requests" : nil
        }
    }

    // MARK: Plumbing

    private func send(_ command: ExecCommand) throws {
        try input.fileHandleForWriting.write(contentsOf: try command.line())
    }

    private func startReading() {
        Thread { [self] in
            var lines = BoundedLineSplitter(longest: Self.longestLine)
            let handle = output.fileHandleForReading
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                for piece in lines.take(chunk) {
                    switch piece {
                    case .line(let line): handleLine(Data(line))
                    case .overlong(let start): overlong(Data(start))
                    }
                }
            }
            processExited()
        }.start()
        Thread { [self] in
            let handle = errors.fileHandleForReading
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                clientLog.append(String(decoding: chunk, as: UTF8.self))
            }
            state.withLockedValue { $0.logComplete = true }
            changes.continuation.yield()
        }.start()
    }

    /// The longest line a client may write: an answer's body is at most 64 KiB of text (six
    /// times that JSON-escaped), its headers and message far less; a client that sends more
    /// body than that is still read up to here.
    static let longestLine = 16 << 20

    /// A line past ``longestLine``, of which `start` is the beginning: noted, and skipped to its
    /// end. Before the hello it fails the run at once; an answer it was stays unanswered (its id
    /// is somewhere in what was skipped), and netsim's deadline answers for it.
    private func overlong(_ start: Data) {
        let quoted = String(decoding: start, as: UTF8.self)
        clientLog.note("[netsim] a line over \(Self.longestLine >> 20) MiB on stdout, skipped (docs/drivers.md: a body is at most 65536 bytes): \(quoted)…")
        refuseBeforeHello("the exec client's first line is over \(Self.longestLine >> 20) MiB; it began: \(quoted)… (docs/drivers.md: the first line a client writes is {\"type\":\"hello\",…})")
    }

    /// Fails the run at once for `why`, when no hello has come: waiting the 20 s for one after
    /// the client wrote something else first only delays the same failure (QA 62).
    private func refuseBeforeHello(_ why: String) {
        state.withLockedValue { state in
            guard !state.greeted, state.refused == nil else { return }
            state.refused = why
        }
        changes.continuation.yield()
    }

    private func handleLine(_ line: Data) {
        switch ExecReply.parse(line) {
        case .hello(let hello):
            // Once greeted, a client says hello no more: a second one is a protocol error,
            // noted, and changes nothing (QA 49: its version ended a run under way).
            if state.withLockedValue({ $0.greeted }) {
                clientLog.note("[netsim] a second hello on stdout, ignored (docs/drivers.md: hello comes once, first): \(String(decoding: line.prefix(200), as: UTF8.self))")
                return
            }
            let greeting = [hello.name, hello.version].compactMap { $0 }.joined(separator: " ")
            let version = hello.protocol ?? 1
            if hello.protocol == nil {
                clientLog.note("[netsim] hello without \"protocol\": taken as exec protocol 1 (docs/drivers.md: say {\"type\":\"hello\",\"protocol\":\(ExecHello.current),…})")
            }
            state.withLockedValue { state in
                // Shown in every report's header: a name of megabytes was, whole (QA 62).
                if !greeting.isEmpty { state.name = namePrefix + (greeting.count > 200 ? greeting.prefix(200) + "…" : greeting) }
                if version > ExecHello.current || version < 1 {
                    state.refused = "the exec client speaks exec protocol \(version); this netsim speaks \(ExecHello.current) (docs/drivers.md) — update netsim, or have the client speak \(ExecHello.current)"
                }
                state.greeted = true
                state.hello = hello
            }
            changes.continuation.yield()
        case .malformedHello(let problem):
            let quoted = String(decoding: line.prefix(200), as: UTF8.self)
            clientLog.note("[netsim] \(problem): \(quoted)")
            refuseBeforeHello("the exec client's hello cannot be read: \(problem.replacingOccurrences(of: " on stdout", with: "")); it said: \(quoted) (docs/drivers.md: {\"type\":\"hello\",\"protocol\":\(ExecHello.current),\"name\":\"…\",\"version\":\"…\"}, each field optional, name and version strings)")
        case .answer(let answer):
            // One answer per request: a second one, or one to an id never sent, is the client's
            // mistake (an answer filed under the wrong request), said in its log (QA 47: ignored
            // without a word, and driver-check passed such a client).
            let expected = state.withLockedValue { $0.waiting[answer.id] != nil }
            if !expected {
                clientLog.note("[netsim] an answer with id \(answer.id), which no request is waiting for (answered already, given up on at netsim's deadline, or never sent), ignored: \(String(decoding: line.prefix(200), as: UTF8.self))")
                return
            }
            if let problem = answer.kindProblem { clientLog.note("[netsim] \(problem)") }
            let (limited, cut) = answer.limitingBody()
            if let cut { clientLog.note("[netsim] \(cut)") }
            self.answer(answer.id, limited.response)
        case .unreadable(let problem, let id):
            clientLog.note("[netsim] \(problem): \(String(decoding: line, as: UTF8.self))")
            if id == nil, !line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) {
                refuseBeforeHello("the exec client's first line is not its hello: \(String(decoding: line.prefix(200), as: UTF8.self)) (docs/drivers.md: stdout carries protocol lines only, {\"type\":\"hello\",…} first; a log goes to stderr)")
            }
            if let id {
                answer(id, DriverResponse(error: .other, errorMessage: Self.standIn + "the exec client broke the protocol (docs/drivers.md): \(problem)"))
            }
        }
    }

    private func answer(_ id: Int, _ response: DriverResponse) {
        let continuation = state.withLockedValue { state -> CheckedContinuation<DriverResponse, Never>? in
            if let waiter = state.waiting.removeValue(forKey: id) { return waiter }
            if !state.exited { state.early[id] = response }  // answered before we waited (or a late timeout)
            return nil
        }
        continuation?.resume(returning: response)
    }

    private func processExited() { Self.processExited(state, changes.continuation) }

    private static func processExited(_ state: NIOLockedValueBox<State>, _ changed: AsyncStream<Void>.Continuation) {
        let pending = state.withLockedValue { state -> [CheckedContinuation<DriverResponse, Never>] in
            state.exited = true
            state.endedEarly = !state.stdinClosed
            defer { state.waiting.removeAll() }
            return Array(state.waiting.values)
        }
        for continuation in pending {
            continuation.resume(returning: DriverResponse(error: .other, errorMessage: Self.standIn + "the exec client exited before answering"))
        }
        changed.yield()
    }
}
