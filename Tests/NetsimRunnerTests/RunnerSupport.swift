import Foundation
import NetsimRunner
import NetsimScenario
import Testing

/// The repository root, found from this file's path (tests may run from anywhere).
let repositoryRoot: String = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url.path
}()

/// Parses a scenario written in a test; a parse failure fails the test with the diagnostics.
func scenario(_ source: String, file: String = "test.scn") throws -> Scenario {
    do {
        return try ScenarioParser.parse(source: source, file: file)
    } catch {
        Issue.record("scenario does not parse:\n\(error.rendered())")
        throw error
    }
}

/// A scenario around one request, `a` (GET /a, answered "a"), with the naive driver: the steps
/// and expectations are given as YAML list items, each line indented by two spaces.
func oneRequestScenario(_ name: String, timeline: String = "  - request: a\n    path: /a", expect: String) -> String {
    """
    name: \(name)
    description: one request, a, and the checks of a test
    upstream:
      routes:
        - path: /a
          body: a
    client:
      driver: naive
    timeline:
    \(timeline)
    expect:
    \(expect)
    """
}

func run(_ scenario: Scenario, seed: UInt64? = nil) async throws -> RunResult {
    try await ScenarioRunner.run(scenario, options: RunOptions(seed: seed, workingDirectory: repositoryRoot))
}

extension RunResult {
    /// The verdict whose title is `title` (e.g. "request a: status 200").
    func verdict(_ title: String) -> CheckVerdict? {
        verdicts.first { $0.title == title }
    }
}
