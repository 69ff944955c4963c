import Foundation
import NetsimScenario

/// The client × scenario matrix of `netsim test --client all` (docs/clients.md): one row per
/// scenario, one column per driver, each cell what the runs of that scenario with that driver
/// showed. Pure: built from outcomes, rendered as aligned text or as a Markdown table, parsed
/// back from Markdown (a committed baseline) and compared with one.
public struct ClientMatrix: Equatable, Sendable {
    /// Column names (driver names), in order.
    public var drivers: [String]
    /// Row names (scenario names), in order.
    public var scenarios: [String]
    /// scenario → driver → cell. A missing cell was not measured (or not in the file).
    public var cells: [String: [String: MatrixCell]]

    public init(drivers: [String], scenarios: [String], cells: [String: [String: MatrixCell]] = [:]) {
        self.drivers = drivers
        self.scenarios = scenarios
        self.cells = cells
    }

    public subscript(scenario: String, driver: String) -> MatrixCell? {
        get { cells[scenario]?[driver] }
        set { cells[scenario, default: [:]][driver] = newValue }
    }
}

/// What one run of one scenario with one driver showed.
public enum MatrixOutcome: Hashable, Sendable, Comparable, CustomStringConvertible {
    case pass
    /// The library's own behaviour failed: the short name of its first failed check (`error`,
    /// `connection new`).
    case fail(String)
    /// The library's own behaviour passed; an application-policy check failed (`judges: policy`):
    /// its short name. A library author reads this cell as a pass; an app developer sees the gap.
    case policy(String)
    /// netsim could not run it.
    case error

    /// `pass`; or the first failed check judging the library; or, when only policy checks
    /// failed, the first of those.
    public init(_ result: RunResult) {
        let failures = result.failures
        if let first = failures.first(where: { $0.expectation.judges == .library }) {
            self = .fail(Self.shortName(first.check.check))
        } else if let first = failures.first {
            self = .policy(Self.shortName(first.check.check))
        } else {
            self = .pass
        }
    }

    /// `pass`, `FAIL error`, `policy FAIL status`, `ERROR`.
    public var description: String {
        switch self {
        case .pass: "pass"
        case .fail(let check): "FAIL \(check)"
        case .policy(let check): "policy FAIL \(check)"
        case .error: "ERROR"
        }
    }

    /// Reads `pass`, `FAIL <check>`, `policy FAIL <check>`, `ERROR`.
    public init?(text: String) {
        let text = text.trimmingCharacters(in: .whitespaces)
        if text == "pass" {
            self = .pass
        } else if text == "ERROR" {
            self = .error
        } else if text.hasPrefix("FAIL "), !text.dropFirst(5).trimmingCharacters(in: .whitespaces).isEmpty {
            self = .fail(text.dropFirst(5).trimmingCharacters(in: .whitespaces))
        } else if text.hasPrefix("policy FAIL "), !text.dropFirst(12).trimmingCharacters(in: .whitespaces).isEmpty {
            self = .policy(text.dropFirst(12).trimmingCharacters(in: .whitespaces))
        } else {
            return nil
        }
    }

    /// pass first, then policy failures, then library failures (each by check name), ERROR last.
    public static func < (a: Self, b: Self) -> Bool {
        a.rank != b.rank ? a.rank < b.rank : a.check < b.check
    }

    private var rank: Int {
        switch self {
        case .pass: 0
        case .policy: 1
        case .fail: 2
        case .error: 3
        }
    }

    private var check: String {
        switch self {
        case .fail(let check), .policy(let check): check
        case .pass, .error: ""
        }
    }

    /// A check's short name: its kind as written in a scenario, plus `new`/`reused` for
    /// connection checks (the full title, with the expectation's subject, is in the run's
    /// failure report). Read from the case name, so a check kind added later gets a name too
    /// (`someNewCheck` → `some new check`) without this file knowing it.
    static func shortName(_ check: Check) -> String {
        let child = Mirror(reflecting: check).children.first
        guard let label = child?.label else { return "\(check)" }
        switch label {
        case "connection": return "connection \(child.map { "\($0.value)" } ?? "")"
        case "requestCount": return "requests"
        case "serverCount": return "server count"
        case "errorMessage": return "message"
        case "httpRequests": return "relay requests"
        case "httpResponses": return "relay responses"
        default: return words(label)
        }
    }

    /// `newConnections` → `new connections`.
    static func words(_ camelCase: String) -> String {
        camelCase.reduce(into: "") { text, character in
            if character.isUppercase, !text.isEmpty { text += " " }
            text += character.lowercased()
        }
    }
}

/// One cell: an outcome every run agreed on, or `flaky` — the runs disagreed (measured), or
/// either of the listed outcomes is accepted (a baseline). An empty list accepts any outcome.
public enum MatrixCell: Hashable, Sendable, CustomStringConvertible {
    case stable(MatrixOutcome)
    case flaky([MatrixOutcome])

    /// The cell for the outcomes of several runs: stable when they all agree.
    public init(runs: [MatrixOutcome]) {
        let distinct = Set(runs).sorted()
        self = distinct.count == 1 ? .stable(distinct[0]) : .flaky(distinct)
    }

    /// `pass`, `FAIL error`, `ERROR`, `flaky: pass, FAIL error`, `flaky`.
    public var description: String {
        switch self {
        case .stable(let outcome): outcome.description
        case .flaky(let outcomes) where outcomes.isEmpty: "flaky"
        case .flaky(let outcomes): "flaky: " + outcomes.map(\.description).joined(separator: ", ")
        }
    }

    /// Reads what `description` writes.
    public init?(text: String) {
        let text = text.trimmingCharacters(in: .whitespaces)
        if let outcome = MatrixOutcome(text: text) {
            self = .stable(outcome)
            return
        }
        guard text.hasPrefix("flaky") else { return nil }
        var rest = text.dropFirst(5).trimmingCharacters(in: .whitespaces)
        if rest.isEmpty {
            self = .flaky([])
            return
        }
        guard rest.hasPrefix(":") else { return nil }
        rest = rest.dropFirst().trimmingCharacters(in: .whitespaces)
        var outcomes: [MatrixOutcome] = []
        for part in rest.split(separator: ",") {
            guard let outcome = MatrixOutcome(text: String(part)) else { return nil }
            outcomes.append(outcome)
        }
        self = .flaky(Array(Set(outcomes)).sorted())
    }

    /// Whether a measurement (the outcomes of its runs) is what this baseline cell expects.
    public func accepts(_ runs: [MatrixOutcome]) -> Bool {
        switch self {
        case .stable(let outcome): !runs.isEmpty && runs.allSatisfy { $0 == outcome }
        case .flaky(let accepted): accepted.isEmpty || runs.allSatisfy(accepted.contains)
        }
    }
}

/// The outcomes of every run, per cell, in the order they were added (`--repeat N`: N per cell).
public struct MatrixMeasurement: Sendable {
    public private(set) var drivers: [String] = []
    public private(set) var scenarios: [String] = []
    public private(set) var runs: [String: [String: [MatrixOutcome]]] = [:]

    public init() {}

    public mutating func add(scenario: String, driver: String, _ outcome: MatrixOutcome) {
        if !scenarios.contains(scenario) { scenarios.append(scenario) }
        if !drivers.contains(driver) { drivers.append(driver) }
        runs[scenario, default: [:]][driver, default: []].append(outcome)
    }

    public func runs(_ scenario: String, _ driver: String) -> [MatrixOutcome] {
        runs[scenario]?[driver] ?? []
    }

    /// The matrix: each cell stable when its runs agreed, `flaky: …` (what they showed) otherwise.
    public var matrix: ClientMatrix {
        var matrix = ClientMatrix(drivers: drivers, scenarios: scenarios)
        for scenario in scenarios {
            for driver in drivers where !runs(scenario, driver).isEmpty {
                matrix[scenario, driver] = MatrixCell(runs: runs(scenario, driver))
            }
        }
        return matrix
    }

    /// Cells whose runs disagreed: `lockscreen × urlsession: pass in 2 of 3 runs, FAIL error in 1`.
    public var unstable: [String] {
        scenarios.flatMap { scenario in
            drivers.compactMap { driver -> String? in
                let outcomes = runs(scenario, driver)
                guard Set(outcomes).count > 1 else { return nil }
                return "\(scenario) × \(driver): " + Self.tally(outcomes)
            }
        }
    }

    /// `pass in 2 of 3 runs, FAIL error in 1` (most frequent first); `FAIL error in 3 of 3 runs`.
    static func tally(_ outcomes: [MatrixOutcome]) -> String {
        let counts = Dictionary(outcomes.map { ($0, 1) }, uniquingKeysWith: +)
        let ordered = counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
        return ordered.enumerated().map { index, pair in
            index == 0 ? "\(pair.key) in \(pair.value) of \(outcomes.count) runs" : "\(pair.key) in \(pair.value)"
        }.joined(separator: ", ")
    }

    /// The matrix to write back as a new baseline: measured cells, except that a cell the old
    /// baseline marked `flaky` stays flaky (accepting what it accepted and what was measured
    /// now) as long as this measurement is consistent with it. A flaky mark is dropped by hand.
    public func matrix(keepingFlakyFrom baseline: ClientMatrix?) -> ClientMatrix {
        var result = matrix
        guard let baseline else { return result }
        for scenario in scenarios {
            for driver in drivers {
                guard case .flaky(let accepted)? = baseline[scenario, driver] else { continue }
                let measured = runs(scenario, driver)
                guard !measured.isEmpty, MatrixCell.flaky(accepted).accepts(measured) else { continue }
                result[scenario, driver] = .flaky(accepted.isEmpty ? [] : Array(Set(accepted + measured)).sorted())
            }
        }
        return result
    }
}

// MARK: Rendering

extension ClientMatrix {
    static let scenarioHeader = "scenario"

    /// Header row then one row per scenario; a cell not measured is `-`.
    var grid: [[String]] {
        [[Self.scenarioHeader] + drivers] + scenarios.map { scenario in
            [scenario] + drivers.map { self[scenario, $0]?.description ?? "-" }
        }
    }

    /// Aligned columns for a terminal.
    public func renderText() -> String {
        let grid = grid
        let widths = grid[0].indices.map { column in grid.map { $0[column].count }.max() ?? 0 }
        return grid.map { row in
            row.enumerated().map { column, text in
                column == row.count - 1 ? text : text.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }

    /// A Markdown table, its columns padded so that it also reads as plain text.
    public func renderMarkdownTable() -> String {
        let grid = grid
        let widths = grid[0].indices.map { column in max(3, grid.map { $0[column].count }.max() ?? 0) }
        func line(_ cells: [String]) -> String {
            "| " + cells.enumerated().map { column, text in
                text.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: " | ") + " |"
        }
        var lines = [line(grid[0])]
        lines.append("|" + widths.map { String(repeating: "-", count: $0 + 2) }.joined(separator: "|") + "|")
        lines += grid.dropFirst().map(line)
        return lines.joined(separator: "\n")
    }

    /// What `--matrix FILE` writes: a short preamble (how it was made, what the cells mean, how
    /// to regenerate it) and the table. `parse` reads it back.
    public func renderMarkdownFile(command: String, runsPerCell: Int) -> String {
        """
        # netsim client matrix

        Written by `\(command)` (\(runsPerCell) run\(runsPerCell == 1 ? "" : "s") per cell). CI compares \
        the measured matrix with this file (`--matrix-baseline`); regenerate it with `ci/update-matrix` \
        and read docs/clients.md before committing a change. A cell is `pass`, `FAIL <check>` (the \
        first check of the library's own behaviour that failed), `policy FAIL <check>` (the library's \
        own behaviour passed; a check of an application policy on top of it — portal detection, \
        Retry-After, back-off — failed), `ERROR` (netsim could not run it), or `flaky: A, B` (runs \
        disagreed; each listed outcome is accepted). `exec` is the scenario's exec client, or the \
        reference urllib3 client (Fixtures/clients/urllib3_client.py); `node-fetch` is Node's fetch \
        (Fixtures/clients/node_fetch_client.mjs); `httpx`, `requests`, `aiohttp`, `curl` (libcurl \
        through pycurl), `go` (net/http) and `okhttp` are those libraries through \
        Fixtures/clients/NAME_client.* (docs/clients.md).

        \(renderMarkdownTable())

        """
    }
}
