/// `--html`: a run, or a suite of runs, as one self-contained HTML page (docs/running.md).
///
/// Built from what every other report reads (`RunResult`: verdicts, outcomes, the event log and
/// the scenario), so the page never tells a different story than the text report. The page is
/// one file with its data as embedded JSON and its style and script inline — no network, no
/// files beside it — so it can be attached to a CI run or mailed as it is. The script draws
/// everything (checks, requests, the timeline, the matrix); the browser test in
/// `Tests/NetsimCLITests/HTMLReportBrowserTests.swift` checks what it drew.
public enum HTMLReport {
    /// One run of a suite, or one netsim could not run; `cell` places it in the matrix.
    public struct Entry: Sendable {
        public enum Outcome: Sendable {
            case run(RunResult)
            case failure(scenario: String, file: String, driver: String, error: String)
        }

        public var outcome: Outcome
        /// The matrix row (scenario) and column (driver) the run counts for.
        public var cell: MatrixPlace?

        public init(_ outcome: Outcome, cell: MatrixPlace? = nil) {
            self.outcome = outcome
            self.cell = cell
        }
    }

    /// A matrix cell's coordinates, as `MatrixMeasurement.add` was given them.
    public struct MatrixPlace: Sendable, Hashable {
        public var scenario: String
        public var driver: String
        public init(scenario: String, driver: String) {
            self.scenario = scenario
            self.driver = driver
        }
    }

    /// `netsim run --html`: one run, its timeline open.
    public static func render(_ result: RunResult) -> String {
        render([Entry(.run(result))], matrix: nil, title: "\(result.scenario.name) · \(result.driverName)")
    }

    /// A suite (`netsim test --html`, `netsim run --client all --html`): with a matrix, the
    /// client × scenario table first, each cell linking to the runs behind it.
    public static func render(_ entries: [Entry], matrix: MatrixMeasurement?, title: String) -> String {
        HTMLReportPage.render(data(entries, matrix: matrix, title: title))
    }

    static func data(_ entries: [Entry], matrix: MatrixMeasurement?, title: String) -> HTMLReportData {
        let runs = entries.enumerated().map { index, entry in
            let id = "run-\(index + 1)"
            switch entry.outcome {
            case .run(let result): return HTMLReportData.Run(id: id, result: result)
            case .failure(let scenario, let file, let driver, let error):
                return HTMLReportData.Run(id: id, scenario: scenario, file: file, driver: driver, error: error)
            }
        }
        return HTMLReportData(title: title, runs: runs, matrix: matrix.map { measurement in
            var anchors: [MatrixPlace: [String]] = [:]
            for (entry, run) in zip(entries, runs) {
                if let cell = entry.cell { anchors[cell, default: []].append(run.id) }
            }
            return HTMLReportData.Matrix(measurement, anchors: anchors)
        })
    }
}

extension HTMLReportData.Matrix {
    init(_ measurement: MatrixMeasurement, anchors: [HTMLReport.MatrixPlace: [String]]) {
        let table = measurement.matrix
        self.init(drivers: measurement.drivers, scenarios: measurement.scenarios, cells: measurement.scenarios.map { scenario in
            measurement.drivers.map { driver in
                table[scenario, driver].map { cell in
                    HTMLReportData.Cell(
                        text: cell.description, state: Self.state(cell),
                        runs: anchors[HTMLReport.MatrixPlace(scenario: scenario, driver: driver)] ?? [])
                }
            }
        })
    }

    static func state(_ cell: MatrixCell) -> String {
        switch cell {
        case .stable(.pass): "pass"
        case .stable(.fail): "fail"
        case .stable(.policy): "policy"
        case .stable(.error): "error"
        case .flaky: "flaky"
        }
    }
}
