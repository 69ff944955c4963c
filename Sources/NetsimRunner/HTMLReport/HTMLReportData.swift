import NetsimCore

/// What an HTML report page embeds as JSON and its script draws: one value per run, built from
/// the same `RunResult` the text, JSON and JUnit reports read, plus the matrix of a suite.
///
/// Times are integer microseconds of scenario time (exact to what `--events` writes, and
/// shorter than decimals in a page that may hold a thousand connections). Keys are short where
/// an array holds many of them (marks, lanes); the page's script is the only reader.
struct HTMLReportData: Encodable {
    var title: String
    var runs: [Run]
    var matrix: Matrix?

    /// One run of one scenario with one driver, or one netsim could not run (`error`).
    struct Run: Encodable {
        /// The page anchor (`run-3`): matrix cells and links point here.
        var id: String
        var scenario: String
        var file: String
        var driver: String
        /// The run's seed; nil for a run that could not start.
        var seed: UInt64?
        var description: String
        var passed: Bool
        /// Why netsim could not run it; nothing else is known then.
        var error: String?
        /// From the start to the last request's end.
        var duration: Int64
        /// The end of the drawn timeline: the duration or the last event, whichever is later.
        var end: Int64
        var steps: [Step]
        var checks: [Check]
        /// "SECURITY: the client accepted …" (``RunResult/securityFindings``): shown above the
        /// checks, whatever they say, as the text report does (QA 62: only a marker's tooltip
        /// had it).
        var security: [String]
        /// Events of no connection: the listener, faults added and lifted, link changes.
        var relay: [Mark]
        /// One swimlane per relay connection, in accept order.
        var lanes: [Lane]
        var requests: [Request]
        /// The width of a byte-density bin: the run's span divided so that every lane together
        /// holds at most ``ByteDensity/budget`` bins.
        var bin: Int64
    }

    /// A timeline step as it fired, with the scenario line that asked for it.
    struct Step: Encodable {
        var t: Int64
        var text: String
        var line: Int?
        var source: String?
    }

    /// The verdict on one check: expected, happened, where it is written.
    struct Check: Encodable {
        var title: String
        var passed: Bool
        var expected: String
        var actual: String
        /// `file:line:column`.
        var location: String
        /// The scenario line itself.
        var source: String?
        /// The time the failure is about, to zoom the timeline there.
        var focus: Int64?
        /// What qualifies the verdict (the text report's `but:` or `note:`).
        var note: String?
    }

    /// One relay connection: its life, its bytes (decimated), and every event that is not bytes.
    struct Lane: Encodable {
        var id: Int
        var client: String
        var opened: Int64
        var closed: Int64?
        var up: Int
        var down: Int
        /// Byte density, sparse: `[bin, up bytes, down bytes, bin, …]`, bins with bytes only.
        var d: [Int]
        /// Bytes faults swallowed: `[bin, bytes, …]`.
        var x: [Int]
        /// Never decimated: the open, faults, FIN and RST, the close, HTTP requests and
        /// responses, the upstream.
        var marks: [Mark]
    }

    /// An event drawn as a marker. `k` is its kind (`open`, `fault`, `lifted`, `fin`, `rst`, `end`,
    /// `req`, `resp`, `upstream`, `upfail`, `unobserved`, `link`, `listener`, `added`), `s` the
    /// side that did it (client, upstream, relay) or a response's status class (`2xx`), `text` the
    /// event as the text report writes it.
    struct Mark: Encodable {
        var t: Int64
        var k: String
        var s: String?
        var text: String
    }

    /// A request the client made and what came of it, with the connection that carried it.
    struct Request: Encodable {
        var label: String
        var method: String
        var path: String
        var start: Int64
        var end: Int64
        var status: Int?
        var error: String?
        var message: String?
        var conn: Int?
        var reused: Bool?
        var summary: String
    }

    /// A suite's client × scenario table; each cell names the runs it was measured from.
    struct Matrix: Encodable {
        var drivers: [String]
        var scenarios: [String]
        /// `cells[scenario][driver]`, nil where nothing ran.
        var cells: [[Cell?]]
    }

    struct Cell: Encodable {
        /// As the text matrix writes it: `pass`, `FAIL error`, `flaky: pass, FAIL error`.
        var text: String
        /// `pass`, `fail`, `flaky` or `error`, for the colour.
        var state: String
        /// The anchors of the runs behind the cell, in run order.
        var runs: [String]
    }
}

extension HTMLReportData.Run {
    /// The run, with every event placed: on its connection's lane, or on the relay row.
    init(id: String, result: RunResult) {
        let end = max(result.duration, result.events.last?.time ?? 0, 1000)
        let lanes = LaneBuilder(events: result.events, end: end)
        self.init(
            id: id, scenario: result.scenario.name, file: result.scenario.file, driver: result.driverName, seed: result.seed,
            description: result.scenario.description, passed: result.passed, error: nil,
            duration: micros(result.duration), end: micros(end),
            steps: Self.steps(result), checks: result.verdicts.map { HTMLReportData.Check($0, in: result) },
            security: result.securityFindings, relay: lanes.relay, lanes: lanes.lanes, requests: result.outcomes.map(HTMLReportData.Request.init),
            bin: micros(lanes.density.width))
    }

    /// A run that could not start: its name and why.
    init(id: String, scenario: String, file: String, driver: String, error: String) {
        self.init(
            id: id, scenario: scenario, file: file, driver: driver, seed: nil, description: "", passed: false, error: error,
            duration: 0, end: 1, steps: [], checks: [], security: [], relay: [], lanes: [], requests: [], bin: 1)
    }

    /// The player records one `step` event per timeline step, in order, so the n-th event is
    /// the n-th step of the scenario: its line can be quoted.
    static func steps(_ result: RunResult) -> [HTMLReportData.Step] {
        let fired = result.events.compactMap { event -> (Int64, String)? in
            if case .step(let description) = event.kind { return (event.time, description) }
            return nil
        }
        return fired.enumerated().map { index, step in
            let location = index < result.scenario.timeline.count ? result.scenario.timeline[index].location : nil
            return HTMLReportData.Step(
                t: micros(step.0), text: step.1, line: location?.line,
                source: location.flatMap { sourceLine($0.line, in: result.scenario.sourceLines) })
        }
    }
}

extension HTMLReportData.Check {
    init(_ verdict: CheckVerdict, in result: RunResult) {
        self.init(
            // Marked as the text report marks it: an app's policy, not the library's behaviour.
            title: verdict.title + (verdict.expectation.judges == .policy ? " [app policy]" : ""),
            passed: verdict.passed, expected: verdict.expected, actual: verdict.actual,
            location: verdict.check.location.description,
            source: sourceLine(verdict.check.location.line, in: result.scenario.sourceLines),
            focus: verdict.focus.map(micros), note: verdict.note)
    }
}

extension HTMLReportData.Request {
    init(_ outcome: RequestOutcome) {
        self.init(
            label: outcome.label, method: outcome.method, path: outcome.path,
            start: micros(outcome.started), end: micros(outcome.finished),
            status: outcome.response.status, error: outcome.response.error?.rawValue,
            message: outcome.response.errorMessage.map(Self.bounded), conn: outcome.connection.map { Int($0.raw) },
            reused: outcome.reusedConnection, summary: Self.bounded(outcome.summary))
    }

    /// A client's error message as the page carries it: its first 500 characters and its length.
    /// A page holds every request of a run (up to 100,000 a step), and an exec client's message
    /// may be megabytes long (QA 62: the page grew with it); the text and JSON reports have it whole.
    static func bounded(_ text: String) -> String {
        text.count <= 500 ? text : "\(text.prefix(500))… (\(text.count) characters)"
    }
}

/// Nanoseconds to the page's microseconds.
func micros(_ nanoseconds: Int64) -> Int64 { nanoseconds / 1000 }

/// Line `number` (1-based) of a scenario, trimmed of its trailing spaces; nil outside the file.
func sourceLine(_ number: Int, in lines: [String]) -> String? {
    guard number >= 1, number <= lines.count else { return nil }
    return String(lines[number - 1].reversed().drop(while: \.isWhitespace).reversed())
}
