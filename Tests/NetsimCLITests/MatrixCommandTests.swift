import Foundation
import NetsimLoopback
import Testing

/// `netsim test --client naive,resilient --matrix … --matrix-baseline …` as a process: the matrix
/// comes just before the summary line, is written as Markdown, and a baseline decides the exit
/// status. Two small scenarios (the bundled `refused`, about a second, and one request), so a
/// run takes seconds.
@Suite("netsim test's client matrix, the process", .serialized)
struct MatrixCommandTests {
    static let oneRequest = """
        name: one-request
        description: one request that succeeds, whatever the client
        upstream:
          routes:
            - path: /
              body: hi
        client:
          driver: resilient
          timeout: 2s
        timeline:
          - request: one
            path: /
        expect:
          - request: one
            status: 200
        """

    /// A baseline that is not there is said in the system's words (QA 61: Foundation's "The
    /// operation could not be completed. The file doesn't exist."), and nothing runs.
    @Test func aMissingBaselineIsSaidPlainly() async throws {
        let (status, out, err) = try await ScenarioCommandTests.netsim(["test", "Scenarios/refused.scn", "--matrix-baseline", "/nonexistent/matrix.md"])
        #expect(status == 2, "\(out)\(err)")
        #expect(err.contains("netsim test: cannot read the matrix baseline /nonexistent/matrix.md: No such file or directory"), "\(err)")
        #expect(!out.contains("PASS") && !out.contains("FAIL"), "\(out)")
    }

    @Test func theMatrixEndsTheOutputAndABaselineDecidesTheExitStatus() async throws {
        let folder = ScenarioCommandTests.temporary("matrix")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let refused = try String(contentsOfFile: ScenarioCommandTests.root + "/Scenarios/refused.scn", encoding: .utf8)
        try refused.write(toFile: folder + "/refused.scn", atomically: true, encoding: .utf8)
        try Self.oneRequest.write(toFile: folder + "/one-request.scn", atomically: true, encoding: .utf8)
        let written = folder + "/matrix.md"

        // Without a baseline: exit 1 (naive fails `refused`), the matrix just before the counts.
        let (status, out, _) = try await ScenarioCommandTests.netsim(["test", folder, "--client", "naive,resilient", "--matrix", written])
        #expect(status == 1, "\(out)")
        let lines = out.split(separator: "\n", omittingEmptySubsequences: false).map(String.init).filter { !$0.isEmpty }
        #expect(lines.suffix(4) == [
            "scenario     naive       resilient",
            "one-request  pass        pass",
            "refused      FAIL error  pass",
            "3 passed, 1 failed",
        ], "\(out)")
        let failLine = lines.first { $0.hasPrefix("FAIL ") && $0.contains("refused.scn (refused, naive") }
        #expect(failLine?.range(of: #", [0-9.]+m?s\)$"#, options: .regularExpression) != nil, "a FAIL line ends with its time, as a PASS line: \(out)")
        let markdown = try String(contentsOfFile: written, encoding: .utf8)
        #expect(markdown.contains("| refused     | FAIL error | pass      |"), "\(markdown)")

        // The same matrix as the baseline: exit 0 although a run failed.
        let (same, sameOut, _) = try await ScenarioCommandTests.netsim(["test", folder, "--client", "naive,resilient", "--matrix-baseline", written])
        #expect(same == 0, "\(sameOut)")
        #expect(sameOut.contains("matrix: every cell matches \(written)"))
        #expect(sameOut.hasSuffix("3 passed, 1 failed\n"))

        // A baseline that expects naive to pass `refused`: exit 1, the cell named, how to update.
        let expectingPass = folder + "/expecting-pass.md"
        try markdown.replacingOccurrences(of: "| FAIL error |", with: "| pass       |")
            .write(toFile: expectingPass, atomically: true, encoding: .utf8)
        let (differs, differsOut, _) = try await ScenarioCommandTests.netsim(["test", folder, "--client", "naive,resilient", "--matrix-baseline", expectingPass])
        #expect(differs == 1, "\(differsOut)")
        #expect(differsOut.contains("matrix: 1 cell differs from \(expectingPass):\n  refused × naive: expected pass, got FAIL error"), "\(differsOut)")
        #expect(differsOut.contains("--matrix \(expectingPass) --matrix-baseline \(expectingPass)"), "the update command")
        #expect(differsOut.hasSuffix("3 passed, 1 failed\n"))

        // A baseline that is not a matrix: exit 2, nothing runs.
        let (invalid, invalidOut, invalidErr) = try await ScenarioCommandTests.netsim(["test", folder, "--client", "all", "--matrix-baseline", folder + "/refused.scn"])
        #expect(invalid == 2)
        #expect(invalidErr.contains("no table with a `| scenario | …` header"), "\(invalidErr)")
        #expect(!invalidOut.contains("PASS"), "nothing ran")

        // QA 36: a --matrix that cannot be written was found after every run, and the other
        // reports were lost with it. Now it is a usage error before anything runs, as theirs are.
        let (unwritable, unwritableOut, unwritableErr) = try await ScenarioCommandTests.netsim(["test", folder, "--client", "naive,resilient", "--matrix", "/nonexistent/m.md"])
        #expect(unwritable == 64)
        #expect(unwritableErr.contains("--matrix /nonexistent/m.md"), "\(unwritableErr)")
        #expect(!unwritableOut.contains("PASS"), "nothing ran")
    }
}
