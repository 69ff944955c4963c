import Foundation
@testable import NetsimRunner
import NetsimScenario
import Testing

/// The client × scenario matrix (ClientMatrix.swift): cells, rendering, parsing a baseline back,
/// comparing a measurement with one — pure, no runs.
@Suite("Client matrix")
struct ClientMatrixTests {
    /// A measurement from (scenario, driver, outcome) triples, in order.
    static func measure(_ runs: [(String, String, MatrixOutcome)]) -> MatrixMeasurement {
        var measurement = MatrixMeasurement()
        for (scenario, driver, outcome) in runs { measurement.add(scenario: scenario, driver: driver, outcome) }
        return measurement
    }

    /// lockscreen and refused with three drivers, measured `rounds` times, the same each time.
    static func stable(rounds: Int = 1) -> MatrixMeasurement {
        measure((0..<rounds).flatMap { _ in
            [
                ("lockscreen", "exec", .pass), ("lockscreen", "urlsession", .fail("connection new")), ("lockscreen", "naive", .fail("error")),
                ("refused", "exec", .fail("error")), ("refused", "urlsession", .error), ("refused", "naive", .fail("error")),
            ]
        })
    }

    @Test func cellsReadBackWhatTheyWrite() {
        let cells: [MatrixCell] = [
            .stable(.pass), .stable(.fail("error")), .stable(.fail("connection new")), .stable(.error),
            .flaky([]), .flaky([.pass, .fail("error")]), .flaky([.pass, .fail("within"), .error]),
        ]
        #expect(cells.map(\.description) == [
            "pass", "FAIL error", "FAIL connection new", "ERROR", "flaky", "flaky: pass, FAIL error", "flaky: pass, FAIL within, ERROR",
        ])
        for cell in cells { #expect(MatrixCell(text: cell.description) == cell, "\(cell)") }
        // Order in a flaky list does not matter; spacing is forgiven.
        #expect(MatrixCell(text: " flaky:FAIL error ,pass ") == .flaky([.pass, .fail("error")]))
        for bad in ["", "PASS", "fail error", "FAIL", "FAIL ", "flaky pass", "flaky: maybe", "ok"] {
            #expect(MatrixCell(text: bad) == nil, "'\(bad)' read as a cell")
        }
    }

    @Test func aCellIsTheFirstFailedChecksShortName() throws {
        let parsed = try scenario("""
            name: two
            description: two checks
            client:
              driver: naive
            upstream:
              routes:
                - path: /
                  body: hi
            timeline:
              - request: a
                path: /
            expect:
              - request: a
                status: 200
                connection: new
              - server: {}
                count: 1
            """)
        func result(failing: [Int]) -> RunResult {
            let checks = parsed.expectations.flatMap { expectation in expectation.checks.map { (expectation, $0) } }
            let verdicts = checks.enumerated().map { index, pair in
                CheckVerdict(expectation: pair.0, check: pair.1, passed: !failing.contains(index), title: "", expected: "", actual: "")
            }
            return RunResult(scenario: parsed, driverName: "naive", outcomes: [], serverRequests: [], events: [], verdicts: verdicts, duration: 0, clientLog: "")
        }
        #expect(MatrixOutcome(result(failing: [])) == .pass)
        #expect(MatrixOutcome(result(failing: [1, 2])).description == "FAIL connection new")
        #expect(MatrixOutcome(result(failing: [2])).description == "FAIL server count")
        #expect(MatrixOutcome(result(failing: [0, 1])).description == "FAIL status")
        // A failed run's report quotes the client's log without the empty line its final
        // newline leaves (QA 43), and keeps a blank line inside it.
        var failed = result(failing: [0])
        failed.clientLog = "first\n\nlast\n"
        #expect(TextReport.render(failed).hasSuffix("client log (last lines):\n  | first\n  | \n  | last"), "\(TextReport.render(failed))")
    }

    @Test func everyCheckKindHasAShortName() {
        let range = CountRange(minimum: 1)
        let checks: [(Check, String)] = [
            (.status(200), "status"), (.body(.contains("x")), "body"), (.error(.none), "error"), (.error(.kind(.reset)), "error"),
            (.within(.seconds(1)), "within"), (.connection(.new), "connection new"), (.connection(.reused), "connection reused"),
            (.requestCount(range), "requests"), (.serverCount(range), "server count"), (.newConnections(TimeWindow(), range), "new connections"),
            (.attempts(TimeWindow(), minimumGrowth: 2, maximumPerSecond: nil), "attempts"), (.bytes(nil, TimeWindow(), range), "bytes"),
        ]
        for (check, name) in checks { #expect(MatrixOutcome.shortName(check) == name, "\(check)") }
        #expect(MatrixOutcome.words("someNewCheck") == "some new check")
    }

    @Test func runsThatDisagreeMakeAFlakyCellAndAreReported() {
        var measurement = Self.stable(rounds: 3)
        measurement.add(scenario: "lockscreen", driver: "urlsession", .pass)  // a 4th run, different
        let matrix = measurement.matrix
        #expect(matrix["lockscreen", "exec"] == .stable(.pass))
        #expect(matrix["lockscreen", "urlsession"] == .flaky([.pass, .fail("connection new")]))
        #expect(matrix["refused", "urlsession"] == .stable(.error))
        #expect(measurement.unstable == ["lockscreen × urlsession: FAIL connection new in 3 of 4 runs, pass in 1"])
        #expect(Self.stable(rounds: 3).unstable.isEmpty)
    }

    @Test func theTerminalMatrixHasAlignedColumns() {
        let text = Self.stable().matrix.renderText()
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines == [
            "scenario    exec        urlsession           naive",
            "lockscreen  pass        FAIL connection new  FAIL error",
            "refused     FAIL error  ERROR                FAIL error",
        ])
    }

    @Test func theMarkdownTableReadsBackAsTheSameMatrix() throws {
        var measurement = Self.stable(rounds: 2)
        measurement.add(scenario: "refused", driver: "exec", .pass)
        let matrix = measurement.matrix
        let file = matrix.renderMarkdownFile(command: "netsim test Scenarios/ --client all --repeat 3", runsPerCell: 3)
        #expect(file.contains("| scenario   | exec                    | urlsession          | naive      |"))
        #expect(file.contains("| refused    | flaky: pass, FAIL error | ERROR "), "\(file)")
        #expect(try ClientMatrix.parse(markdown: file) == matrix)
        // A plain hand-written table (no padding, `-` for a cell not measured) reads too.
        let hand = try ClientMatrix.parse(markdown: "intro\n\n|scenario|naive|resilient|\n|:--|--|--|\n|lockscreen|FAIL error|-|\n\nafter\n")
        #expect(hand.drivers == ["naive", "resilient"])
        #expect(hand.scenarios == ["lockscreen"])
        #expect(hand["lockscreen", "naive"] == .stable(.fail("error")))
        #expect(hand["lockscreen", "resilient"] == nil)
    }

    @Test func aBrokenBaselineSaysWhereItIsBroken() {
        func error(_ text: String) -> MatrixParseError? {
            do {
                _ = try ClientMatrix.parse(markdown: text)
                return nil
            } catch {
                return error
            }
        }
        #expect(error("no table here")?.line == 1)
        #expect(error("| scenario | naive |\n| lockscreen | pass |")?.message.contains("|---|") == true)
        #expect(error("# m\n| scenario | naive |\n|---|---|\n| lockscreen | pass | pass |") == MatrixParseError(line: 4, message: "3 cells, the header has 2"))
        let bad = error("| scenario | naive |\n|---|---|\n| lockscreen | passed |")
        #expect(bad?.line == 3)
        #expect(bad?.message.contains("lockscreen × naive: 'passed' is not a cell") == true, "\(String(describing: bad))")
        #expect(error("| scenario | naive |\n|---|---|\n| a | pass |\n| a | pass |")?.message == "scenario a appears twice")
    }

    @Test func aMeasurementThatMatchesItsBaselineMatches() throws {
        let baseline = try ClientMatrix.parse(markdown: Self.stable().matrix.renderMarkdownTable())
        let comparison = MatrixComparison(measured: Self.stable(rounds: 3), baseline: baseline)
        #expect(comparison.matches)
        #expect(comparison.differences.isEmpty && comparison.acceptedFlaky.isEmpty && comparison.notMeasured.isEmpty)
        #expect(comparison.render(baselinePath: "docs/clients-matrix.md", updateCommand: "ci/update-matrix") == "matrix: every cell matches docs/clients-matrix.md")
    }

    @Test func aBaselineMismatchNamesEachDifferingCellAndHowToUpdate() throws {
        var baseline = Self.stable().matrix
        baseline["lockscreen", "urlsession"] = .stable(.pass)
        baseline["refused", "naive"] = .stable(.fail("within"))
        var measured = Self.stable(rounds: 3)
        measured.add(scenario: "lockscreen", driver: "exec", .fail("error"))  // exec: unstable this time
        let comparison = MatrixComparison(measured: measured, baseline: baseline)
        #expect(!comparison.matches)
        #expect(comparison.differences == [
            "lockscreen × exec: expected pass, got pass in 3 of 4 runs, FAIL error in 1 (unstable)",
            "lockscreen × urlsession: expected pass, got FAIL connection new",
            "refused × naive: expected FAIL within, got FAIL error",
        ])
        #expect(comparison.cellDifferences["refused"]?["naive"] == "refused × naive: expected FAIL within, got FAIL error")
        let report = comparison.render(baselinePath: "docs/clients-matrix.md", updateCommand: "ci/update-matrix")
        #expect(report.hasPrefix("matrix: 3 cells differ from docs/clients-matrix.md:\n  lockscreen × exec: expected pass"))
        #expect(report.contains("ci/update-matrix"))
    }

    @Test func aFlakyBaselineCellAcceptsItsOutcomesAndIsReported() throws {
        var baseline = Self.stable().matrix
        baseline["lockscreen", "urlsession"] = .flaky([.pass, .fail("connection new")])
        baseline["refused", "exec"] = .flaky([])  // bare `flaky`: anything
        var measured = Self.stable(rounds: 2)
        measured.add(scenario: "lockscreen", driver: "urlsession", .pass)
        let comparison = MatrixComparison(measured: measured, baseline: baseline)
        #expect(comparison.matches, "\(comparison.differences)")
        #expect(comparison.acceptedFlaky == [
            "lockscreen × urlsession: flaky: pass, FAIL connection new — this time FAIL connection new in 2 of 3 runs, pass in 1",
            "refused × exec: flaky — this time FAIL error in 2 of 2 runs",
        ])
        #expect(comparison.render(baselinePath: "b.md", updateCommand: "x").contains("flaky in the baseline (either outcome accepted):\n  lockscreen × urlsession"))
        // An outcome the flaky cell does not list is a difference.
        measured.add(scenario: "lockscreen", driver: "urlsession", .fail("status"))
        let third = MatrixComparison(measured: measured, baseline: baseline)
        #expect(third.differences == [
            "lockscreen × urlsession: expected flaky: pass, FAIL connection new, got FAIL connection new in 2 of 4 runs, pass in 1, FAIL status in 1 (unstable)",
        ])
    }

    @Test func cellsOutsideTheBaselineDifferAndBaselineCellsNotRunAreOnlyNoted() throws {
        let baseline = try ClientMatrix.parse(markdown: """
            | scenario | exec | urlsession | naive | resilient |
            |---|---|---|---|---|
            | lockscreen | pass | FAIL connection new | FAIL error | pass |
            | removed | pass | pass | pass | pass |
            """)
        var measured = Self.stable()
        measured.add(scenario: "lockscreen", driver: "resilient", .pass)
        let comparison = MatrixComparison(measured: measured, baseline: baseline)
        #expect(comparison.differences == [
            "refused × exec: scenario not in the baseline, got FAIL error",
            "refused × urlsession: scenario not in the baseline, got ERROR",
            "refused × naive: scenario not in the baseline, got FAIL error",
        ])
        #expect(comparison.notMeasured == ["scenarios removed"])
        #expect(comparison.render(baselinePath: "b.md", updateCommand: "x").contains("in the baseline but not run (not compared): scenarios removed"))
    }

    @Test func regeneratingKeepsAFlakyMarkWhileTheMeasurementFitsIt() {
        var baseline = Self.stable().matrix
        baseline["lockscreen", "urlsession"] = .flaky([.pass, .fail("connection new")])
        baseline["lockscreen", "naive"] = .flaky([.pass])  // naive now FAILs: the mark no longer fits
        baseline["refused", "exec"] = .flaky([])
        let written = Self.stable(rounds: 3).matrix(keepingFlakyFrom: baseline)
        #expect(written["lockscreen", "urlsession"] == .flaky([.pass, .fail("connection new")]))
        #expect(written["lockscreen", "naive"] == .stable(.fail("error")))
        #expect(written["refused", "exec"] == .flaky([]))
        #expect(written["refused", "naive"] == .stable(.fail("error")))
        #expect(Self.stable().matrix(keepingFlakyFrom: nil) == Self.stable().matrix)
    }

    @Test func withABaselineJUnitHasOneCasePerCellThatFailsOnlyWhenTheCellDiffers() throws {
        var baseline = Self.stable().matrix
        baseline["lockscreen", "urlsession"] = .stable(.pass)
        let measured = Self.stable(rounds: 2)
        let comparison = MatrixComparison(measured: measured, baseline: baseline)
        var runs: [JUnitReport.Case] = []
        var cells: [(scenario: String, driver: String)] = []
        for round in 1...2 {
            for scenario in measured.scenarios {
                for driver in measured.drivers {
                    let outcome = measured.runs(scenario, driver)[round - 1]
                    runs.append(JUnitReport.Case(
                        name: "\(scenario) [\(driver)] (run \(round) of 2)", file: "Scenarios/\(scenario).scn", seconds: 1,
                        failure: outcome == .pass ? nil : "FAIL \(scenario) report"))
                    cells.append((scenario, driver))
                }
            }
        }
        let cases = JUnitReport.cells(runs, cells: cells, comparison: comparison)
        #expect(cases.map(\.name) == [
            "lockscreen [exec]", "lockscreen [urlsession]", "lockscreen [naive]", "refused [exec]", "refused [urlsession]", "refused [naive]",
        ])
        #expect(cases.filter { $0.failure != nil }.map(\.name) == ["lockscreen [urlsession]"])
        let differing = try #require(cases.first { $0.name == "lockscreen [urlsession]" })
        #expect(differing.failure?.hasPrefix("lockscreen × urlsession: expected pass, got FAIL connection new\n\n0 of 2 runs passed") == true)
        #expect(differing.seconds == 2)
        let expectedFailure = try #require(cases.first { $0.name == "lockscreen [naive]" })
        #expect(expectedFailure.output?.contains("matches the matrix baseline; 0 of 2 runs passed") == true)
        #expect(expectedFailure.output?.contains("FAIL lockscreen report") == true)
        let xml = JUnitReport.render(cases)
        #expect(xml.contains("failures=\"1\""))
        #expect(xml.contains("<system-out>matches the matrix baseline; 2 of 2 runs passed</system-out>"))
    }
}
