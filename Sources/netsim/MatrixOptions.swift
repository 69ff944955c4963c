import NetsimCore
import ArgumentParser
import Foundation
import NetsimRunner

/// `netsim test`'s matrix options: `--repeat`, `--matrix FILE`, `--matrix-baseline FILE`
/// (docs/running.md, docs/clients.md). The matrix itself is `ClientMatrix` (NetsimRunner).
struct MatrixOptions: ParsableArguments {
    @Option(name: .customLong("repeat"), help: ArgumentHelp("Run every scenario with every driver N times; a matrix cell whose runs disagree shows as `flaky: A, B`.", valueName: "n"), transform: parseCount)
    var rounds: Int = 1

    @Option(help: ArgumentHelp("Write the client × scenario matrix to FILE as a Markdown table. Example: --matrix docs/clients-matrix.md", valueName: "file"))
    var matrix: String?

    @Option(help: ArgumentHelp("Compare the matrix with FILE (a table --matrix wrote): exit status 0 when every cell matches, 1 when one differs — whatever the runs' verdicts. Example: --matrix-baseline docs/clients-matrix.md", valueName: "file"))
    var matrixBaseline: String?

    func validate() throws {
        guard rounds >= 1 else { throw ValidationError("--repeat must be at least 1") }
    }

    /// The committed matrix named by `--matrix-baseline`, read before anything runs (exit 2 when
    /// it is missing or not a matrix).
    func loadBaseline() throws -> ClientMatrix? {
        guard let path = matrixBaseline else { return nil }
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            StandardStream.error.write("netsim test: cannot read the matrix baseline \(path): \(error.posixReason)\n")  // QA 61: Foundation's "could not be completed"
            throw ExitCode(2)
        }
        do {
            return try ClientMatrix.parse(markdown: text)
        } catch {
            StandardStream.error.write("netsim test: \(path): \(error)\n")
            throw ExitCode(2)
        }
    }

    /// Whether this test run ends with a matrix: more than one driver, or a matrix file asked for.
    func wanted(drivers: Int) -> Bool { drivers > 1 || matrix != nil || matrixBaseline != nil }

    /// Prints the unstable cells, the comparison with the baseline and the matrix (in that order,
    /// so the matrix comes just before the summary line); returns the comparison. ``write(_:baseline:)``
    /// writes `--matrix`, with the other reports.
    /// - Parameter clients: the `--client`/`--exec`/`--exec-dir` words that chose the columns.
    func report(_ measurement: MatrixMeasurement, baseline: ClientMatrix?, paths: [String], clients: [String]) throws -> MatrixComparison? {
        let unstable = measurement.unstable
        if !unstable.isEmpty {
            print("matrix: \(unstable.count) cell\(unstable.count == 1 ? "" : "s") disagreed between runs (timing-sensitive):")
            print(unstable.map { "  " + $0 }.joined(separator: "\n"))
        }
        let comparison = baseline.map { MatrixComparison(measured: measurement, baseline: $0) }
        if let comparison, let path = matrixBaseline {
            print(comparison.render(baselinePath: path, updateCommand: updateCommand(paths: paths, clients: clients)))
        }
        print("")
        print(measurement.matrix.renderText())
        print("")
        return comparison
    }

    /// Writes `--matrix FILE` (if given), the flaky cells the baseline knows kept.
    func write(_ measurement: MatrixMeasurement, baseline: ClientMatrix?) throws {
        guard let matrix else { return }
        let command = ShellQuoting.line(["netsim"] + CommandLine.arguments.dropFirst())
        let table = measurement.matrix(keepingFlakyFrom: baseline)
        try writeOrFail(table.renderMarkdownFile(command: command, runsPerCell: rounds), to: matrix)
    }

    /// How to regenerate the baseline: `ci/update-matrix` for the committed one, otherwise the
    /// netsim command that does the same.
    func updateCommand(paths: [String], clients: [String]) -> String {
        guard let baseline = matrixBaseline else { return "" }
        if (baseline as NSString).standardizingPath == "docs/clients-matrix.md", paths.map({ ($0 as NSString).standardizingPath }) == ["Scenarios"] {
            return "ci/update-matrix"
        }
        return ShellQuoting.line(["netsim", "test"] + paths + clients
            + ["--repeat", "\(max(3, rounds))", "--matrix", baseline, "--matrix-baseline", baseline])
    }
}
