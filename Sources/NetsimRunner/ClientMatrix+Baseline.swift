import Foundation
import NetsimScenario

// Reading a committed matrix (`--matrix-baseline`) and comparing a measurement with it.

// MARK: Parsing

public struct MatrixParseError: Error, CustomStringConvertible, Equatable {
    public var line: Int
    public var message: String
    public var description: String { "line \(line): \(message)" }
}

extension ClientMatrix {
    /// Reads the first table whose header starts with `| scenario |`; other lines are ignored.
    public static func parse(markdown: String) throws(MatrixParseError) -> ClientMatrix {
        let lines = markdown.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        func cells(_ line: String) -> [String]? {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("|") else { return nil }
            var parts = trimmed.dropFirst().split(separator: "|", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            if trimmed.hasSuffix("|"), trimmed.count > 1 { parts.removeLast() }
            return parts
        }
        guard let headerIndex = lines.firstIndex(where: { cells($0)?.first == scenarioHeader }) else {
            throw MatrixParseError(line: 1, message: "no table with a `| \(scenarioHeader) | …` header")
        }
        let header = cells(lines[headerIndex])!
        let drivers = Array(header.dropFirst())
        guard !drivers.isEmpty, Set(drivers).count == drivers.count, !drivers.contains("") else {
            throw MatrixParseError(line: headerIndex + 1, message: "the header must name each driver once")
        }
        guard headerIndex + 1 < lines.count, let rule = cells(lines[headerIndex + 1]),
              rule.count == header.count, rule.allSatisfy({ !$0.isEmpty && $0.allSatisfy { "-:".contains($0) } })
        else {
            throw MatrixParseError(line: headerIndex + 2, message: "expected the table's `|---|` line under its header")
        }
        var matrix = ClientMatrix(drivers: drivers, scenarios: [])
        var index = headerIndex + 2
        while index < lines.count, let row = cells(lines[index]) {
            guard row.count == header.count else {
                throw MatrixParseError(line: index + 1, message: "\(row.count) cells, the header has \(header.count)")
            }
            let scenario = row[0]
            guard !scenario.isEmpty, !matrix.scenarios.contains(scenario) else {
                throw MatrixParseError(line: index + 1, message: scenario.isEmpty ? "no scenario name" : "scenario \(scenario) appears twice")
            }
            matrix.scenarios.append(scenario)
            for (driver, text) in zip(drivers, row.dropFirst()) where text != "-" {
                guard let cell = MatrixCell(text: text) else {
                    throw MatrixParseError(
                        line: index + 1,
                        message: "\(scenario) × \(driver): '\(text)' is not a cell (pass, FAIL <check>, ERROR, flaky, flaky: A, B)")
                }
                matrix[scenario, driver] = cell
            }
            index += 1
        }
        return matrix
    }
}

// MARK: Comparing with a baseline

/// A measurement against a baseline matrix.
public struct MatrixComparison: Sendable {
    /// `lockscreen × urlsession: expected pass, got FAIL error`: each makes the comparison fail.
    public var differences: [String] = []
    /// Baseline cells marked flaky, with what this measurement showed (reported, not hidden).
    public var acceptedFlaky: [String] = []
    /// Baseline rows and columns this measurement did not cover (not compared).
    public var notMeasured: [String] = []
    /// scenario → driver → the difference, for per-cell reports (JUnit).
    public var cellDifferences: [String: [String: String]] = [:]

    public var matches: Bool { differences.isEmpty }

    public init(measured: MatrixMeasurement, baseline: ClientMatrix) {
        for scenario in measured.scenarios {
            for driver in measured.drivers {
                let runs = measured.runs(scenario, driver)
                guard !runs.isEmpty else { continue }
                let got = Self.describe(runs)
                let name = "\(scenario) × \(driver)"
                guard let expected = baseline[scenario, driver] else {
                    let why = !baseline.scenarios.contains(scenario) ? "scenario not in the baseline"
                        : !baseline.drivers.contains(driver) ? "driver not in the baseline" : "cell empty in the baseline"
                    note(scenario, driver, "\(name): \(why), got \(got)")
                    continue
                }
                if !expected.accepts(runs) {
                    note(scenario, driver, "\(name): expected \(expected), got \(got)")
                } else if case .flaky = expected {
                    acceptedFlaky.append("\(name): \(expected) — this time \(MatrixMeasurement.tally(runs))")
                }
            }
        }
        let missingRows = baseline.scenarios.filter { !measured.scenarios.contains($0) }
        let missingColumns = baseline.drivers.filter { !measured.drivers.contains($0) }
        if !missingRows.isEmpty { notMeasured.append("scenarios \(missingRows.joined(separator: ", "))") }
        if !missingColumns.isEmpty { notMeasured.append("drivers \(missingColumns.joined(separator: ", "))") }
    }

    private mutating func note(_ scenario: String, _ driver: String, _ text: String) {
        differences.append(text)
        cellDifferences[scenario, default: [:]][driver] = text
    }

    /// `FAIL error` when every run agreed, else `pass in 2 of 3 runs, FAIL error in 1 (unstable)`.
    static func describe(_ runs: [MatrixOutcome]) -> String {
        Set(runs).count == 1 ? runs[0].description : MatrixMeasurement.tally(runs) + " (unstable)"
    }

    /// The report printed before the matrix: differences (with how to update the baseline),
    /// accepted flaky cells, what was not compared.
    public func render(baselinePath: String, updateCommand: String) -> String {
        var lines: [String] = []
        if matches {
            lines.append("matrix: every cell matches \(baselinePath)")
        } else {
            lines.append("matrix: \(differences.count) cell\(differences.count == 1 ? "" : "s") differ\(differences.count == 1 ? "s" : "") from \(baselinePath):")
            lines += differences.map { "  " + $0 }
            lines.append("  If the change is intended (a client, a driver or a scenario changed), regenerate the baseline and commit it")
            lines.append("  with a word on why in docs/clients.md:  \(updateCommand)")
            lines.append("  A cell that flips between runs is timing-sensitive: investigate it; mark it `flaky` only if it must be (docs/clients.md).")
        }
        if !acceptedFlaky.isEmpty {
            lines.append("matrix: flaky in the baseline (either outcome accepted):")
            lines += acceptedFlaky.map { "  " + $0 }
        }
        if !notMeasured.isEmpty {
            lines.append("matrix: in the baseline but not run (not compared): " + notMeasured.joined(separator: "; "))
        }
        return lines.joined(separator: "\n")
    }
}
