import Foundation
import NetsimCore
import NetsimFaults
import NetsimScenario

/// `netsim driver-check -- COMMAND`: a conformance check of an exec client (docs/drivers.md,
/// "Checking a client"). It drives the client through every message of the protocol and every
/// error kind with real servers and relay faults on loopback — the same runner, relay and
/// built-in server a scenario run uses — and says, per check, what the client did wrong.
public enum DriverCheck {
    /// One check's verdict.
    public struct Finding: Sendable, Equatable {
        public enum Verdict: String, Sendable { case pass = "ok", fail = "FAIL", warn = "warn" }
        /// Short name: `hello`, `error refused`, `answer headers`.
        public var check: String
        public var verdict: Verdict
        /// What was expected and what the client did.
        public var detail: String

        public init(_ check: String, _ verdict: Verdict, _ detail: String) {
            self.check = check
            self.verdict = verdict
            self.detail = detail
        }

        /// `ok    error refused — …`
        public var line: String {
            verdict.rawValue.padding(toLength: 5, withPad: " ", startingAt: 0) + " " + check + " — " + detail
        }
    }

    /// Runs every check in turn, telling `report` each finding as it is made.
    public static func run(_ client: ExecClient, options: RunOptions = RunOptions(), report: @Sendable (Finding) -> Void = { _ in }) async -> [Finding] {
        var findings: [Finding] = []
        func add(_ new: [Finding]) {
            // A protocol mistake shows in every check's run: it is said once, at the first.
            let new = new.filter { !$0.check.hasPrefix("protocol") || !findings.contains { $0.check.hasPrefix("protocol") } }
            new.forEach(report)
            findings += new
        }
        var options = options
        options.exec = client
        options.driver = "exec"
        add(await greeting(client, options: options))
        // Without a hello, or an answer to the first request, every further check would only
        // wait out its deadlines (minutes for a client that reads and never answers).
        if findings.contains(where: { ["hello", "answers"].contains($0.check) && $0.verdict == .fail }) { return findings }
        add(await run(DriverCheckScenarios.answers, options: options, judge: DriverCheckScenarios.judgeAnswers))
        for kind in DriverCheckScenarios.errorKinds {
            add(await run(kind.source, options: options) { [kind.judge($0)] })
        }
        return findings
    }

    /// The hello line, the `dns` error (a URL whose host cannot resolve: the runner's scenarios
    /// always point at the relay) and the end: exit 0 once stdin closes.
    static func greeting(_ client: ExecClient, options: RunOptions) async -> [Finding] {
        let scenario: Scenario
        do { scenario = try ScenarioParser.parse(source: DriverCheckScenarios.answers, file: "driver-check") } catch {
            return [Finding("hello", .fail, "netsim's own check scenario did not parse: \(error)")]
        }
        let driver: ExecDriver
        do {
            driver = try ExecDriver(command: client.command, client: scenario.client,
                                    workingDirectory: client.directory ?? options.workingDirectory,
                                    answerDeadline: Self.firstAnswerDeadline(scenario.client))
        } catch {
            return [Finding("hello", .fail, "\(error)")]
        }
        var findings: [Finding] = []
        let started = ContinuousClock.now
        do {
            try await driver.ready(timeout: .seconds(20))
        } catch {
            await driver.shutdown()
            return [Finding("hello", .fail, "\(error)")]
        }
        let took = ContinuousClock.now - started
        let hello = driver.hello
        // An empty name is no name (QA 65: `"name":""` passed, and reports showed nothing).
        let named = [hello?.name, hello?.version].compactMap { $0?.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.joined(separator: " ")
        findings.append(Finding("hello", named.isEmpty ? .warn : .pass,
                                (named.isEmpty ? "said hello without \"name\" and \"version\" (reports show them)" : "\"\(named)\"")
                                    + ", \(took.compactDescription) after start"))
        switch hello?.protocol {
        case ExecHello.current?:
            findings.append(Finding("hello protocol", .pass, "protocol \(ExecHello.current)"))
        case let other?:
            findings.append(Finding("hello protocol", .fail, "announced protocol \(other); this netsim speaks \(ExecHello.current)"))
        case nil:
            findings.append(Finding("hello protocol", .fail, "no \"protocol\" in hello: write {\"type\":\"hello\",\"protocol\":\(ExecHello.current),…}"))
        }
        let request = DriverRequest(id: 1, method: "GET", url: "http://netsim-driver-check.invalid/", headers: [], body: nil)
        do {
            let response = try await driver.perform(request)
            if ExecDriver.isUnanswered(response) {
                findings.append(Finding("answers", .fail, "no answer to a request within \(Self.firstAnswerDeadline(scenario.client).compactDescription) (a URL whose host does not resolve, which fails at once or, for a client that retries lookups, by its timeout); every request needs one answer line with its id"))
            } else {
                findings.append(judge(response, expected: .dns, what: "a URL whose host does not resolve (.invalid, RFC 6761)"))
            }
        } catch {
            findings.append(Finding("error dns", .fail, "netsim could not ask: \(error)"))
        }
        await driver.shutdown()
        let ending = driver.ending ?? "still running"
        findings.append(Finding("end", ending == "exit 0" ? .pass : .fail,
                                ending == "exit 0" ? "exited with status 0 when stdin closed" : "\(ending); the protocol asks for exit status 0 once stdin closes and every answer is out"))
        return findings + protocolFindings(await driver.log)
    }

    /// How long the first request (a host that cannot resolve) may go unanswered before the
    /// check stops: the client's timeout and 10 s. Most clients fail it at once; AsyncHTTPClient
    /// retries the lookup until its deadline, and a bare 10 s raced that and failed it.
    static func firstAnswerDeadline(_ client: ClientSpec) -> Duration {
        (client.timeout ?? .seconds(30)) + .seconds(10)
    }

    /// Runs one check scenario with the client and judges what came of it.
    static func run(_ source: String, options: RunOptions, judge: (RunResult) -> [Finding]) async -> [Finding] {
        let scenario: Scenario
        do { scenario = try ScenarioParser.parse(source: source, file: "driver-check") } catch {
            return [Finding("scenario", .fail, "netsim's own check scenario did not parse: \(error)")]
        }
        do {
            let result = try await ScenarioRunner.run(scenario, options: options)
            let protocolNotes = protocolFindings(result.clientLog)
            // A client that exited (or broke the protocol) answered nothing: say so first on each
            // failure, which would otherwise blame what the check was about.
            guard let lost = result.outcomes.first(where: { ExecDriver.isNetsims($0.response) })?.response.errorMessage else {
                return judge(result) + protocolNotes
            }
            return judge(result).map { finding in
                guard finding.verdict == .fail, !finding.detail.contains("the client gave no answer") else { return finding }
                return Finding(finding.check, .fail, "the client gave no answer (\(printable(lost))); " + finding.detail)
            } + protocolNotes
        } catch {
            return [Finding(scenario.name, .fail, "netsim could not run the check: \(error)")]
        }
    }

    /// The lines netsim noted in the client's log as breaking the protocol (a line on stdout that
    /// is not one, an answer to no request), as one failed check: they passed unseen, or a
    /// malformed answer showed only as "no answer" (QA 47). The hello's own note has its check,
    /// and a client gone before its config line fails the check that needed it.
    static func protocolFindings(_ log: String) -> [Finding] {
        let others = ["[netsim] hello without", "[netsim] the exec client did not take its config line"]
        let notes = log.split(separator: "\n").filter { line in line.hasPrefix("[netsim] ") && !others.contains { line.hasPrefix($0) } }
        guard let first = notes.first else { return [] }
        let more = notes.count > 1 ? " (and \(notes.count - 1) more)" : ""
        return [Finding("protocol", .fail, "stdout carries protocol lines only, one answer per request (docs/drivers.md); netsim noted: \(printable(String(first.dropFirst(9))))\(more)")]
    }

    /// A client's message as one short line: control characters (a garbage answer's bytes
    /// echoed back) become `?`, at most 160 characters.
    static func printable(_ text: String) -> String {
        let line = String(String.UnicodeScalarView(text.unicodeScalars.map { $0.properties.generalCategory == .control || $0.properties.generalCategory == .format ? "?" : $0 }))
        return line.count > 160 ? line.prefix(159) + "…" : line
    }

    /// The verdict on one request that should have failed with `expected`.
    static func judge(_ response: DriverResponse, expected: ErrorKind, what: String, took: Int64? = nil, limit: Int64? = nil) -> Finding {
        let check = "error \(expected.rawValue)"
        let message = response.errorMessage.map { " (message: \(printable($0)))" } ?? ""
        if ExecDriver.isNetsims(response) {
            return Finding(check, .fail, "\(what): the client gave no answer; netsim's own\(message)")
        }
        guard let kind = response.error else {
            return Finding(check, .fail, "\(what): expected error kind \"\(expected.rawValue)\", got status \(response.status.map(String.init) ?? "null") and no error")
        }
        guard kind == expected else {
            return Finding(check, .fail, "\(what): expected error kind \"\(expected.rawValue)\", got \"\(kind.rawValue)\"\(message) — docs/drivers.md, \"Classifying errors\"")
        }
        if response.status != nil || response.bodySHA256 != nil {
            return Finding(check, .fail, "\(what): the kind is right, but a failed answer must have null status, body_sha256, body_length and body")
        }
        if let took, let limit, took > limit {
            return Finding(check, .fail, "\(what): \"\(expected.rawValue)\" only after \(formatNanoseconds(took)), more than config's timeout allows (\(formatNanoseconds(limit)) with slack) — is \"timeout\" applied?")
        }
        return Finding(check, .pass, "\(what) → \"\(kind.rawValue)\"\(message)")
    }
}
