import Foundation
import NetsimRunner
import NetsimScenario
import Testing

/// `--json` as readers see it: the keys docs/running.md promises, optional ones left out
/// when unknown, from one real run (built-in server, relay, the naive reference client).
@Suite("JSON reports")
struct JSONReportTests {
    static let source = """
        name: report
        description: one answered request, one failed
        upstream:
          routes:
            - path: /hello
              body: hello
        client:
          driver: naive
          timeout: 2s
          retries: 0
        timeline:
          - request: hello
            path: /hello
          - fault: rst
            target: existing
          - fault: refuse
          - request: down
            path: /hello
        expect:
          - request: hello
            status: 200
          - request: down
            status: 200
        """

    /// The document parsed back as plain JSON values.
    static func object(_ report: some Encodable) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: JSONReport.data(report)) as? [String: Any])
    }

    @Test func aRunHasItsChecksRequestsAndServerRequests() async throws {
        let result = try await run(try scenario(Self.source, file: "report.scn"))
        let run = try Self.object(JSONReport.Run(result))
        #expect(Set(run.keys) == ["scenario", "file", "driver", "seed", "passed", "duration_seconds", "checks", "requests", "server_requests"])
        // The seed in force, so a report says how to make the same random decisions again.
        #expect(run["seed"] as? Int == Int(result.scenario.seed))
        #expect(run["scenario"] as? String == "report" && run["file"] as? String == "report.scn")
        #expect(run["driver"] as? String == result.driverName && run["passed"] as? Bool == false)

        let checks = try #require(run["checks"] as? [[String: Any]])
        #expect(checks.map { Set($0.keys) } == Array(repeating: ["title", "passed", "expected", "actual", "location", "judges"], count: 2))
        #expect(checks.map { $0["judges"] as? String } == ["library", "library"])
        #expect(checks.map { $0["passed"] as? Bool } == [true, false])
        #expect(checks.first?["title"] as? String == "request hello: status 200")

        let requests = try #require(run["requests"] as? [[String: Any]])
        #expect(requests.count == 2)
        let base: Set = ["name", "index", "method", "path", "started", "finished", "connection", "reused_connection"]
        // The answered request has a status, a digest, a length and its headers (what header
        // checks judge); the failed one an error, no status, no headers.
        #expect(Set(requests[0].keys) == base.union(["status", "body_sha256", "body_length", "headers"]))
        #expect(requests[0]["status"] as? Int == 200 && requests[0]["reused_connection"] as? Bool == false)
        #expect(requests[0]["body_length"] as? Int == 5)
        #expect((requests[0]["headers"] as? [String: String])?["content-length"] == "5", "\(requests[0])")
        #expect(Set(requests[1].keys).isSuperset(of: ["error", "error_message"]) && requests[1]["status"] == nil && requests[1]["headers"] == nil)

        let served = try #require(run["server_requests"] as? [[String: Any]])
        #expect(served.map { Set($0.keys) } == [["method", "path", "connection", "time", "status", "version"]])   // "stream" on h2 only
        #expect(served.first?["version"] as? String == "HTTP/1.1")
        #expect(served.first?["status"] as? Int == 200)
        // On the scenario timeline, as the client's times are: received while the client waited.
        let received = try #require(served.first?["time"] as? Double)
        let asked = try #require(requests[0]["started"] as? Double), answered = try #require(requests[0]["finished"] as? Double)
        #expect(asked <= received && received <= answered, "\(asked) ≤ \(received) ≤ \(answered)")
    }

    @Test func aSuiteListsRunsAndFailuresAndTheMatrixOnlyWhenAsked() throws {
        var measurement = MatrixMeasurement()
        measurement.add(scenario: "lockscreen", driver: "naive", .fail("error"))
        measurement.add(scenario: "outage", driver: "resilient", .pass)
        let failure = JSONReport.Entry.failure(JSONReport.Failure(scenario: "x", file: "x.scn", driver: "naive", seed: 7, error: "cannot start the relay"))
        let suite = try Self.object(JSONReport.Suite(runs: [failure], matrix: JSONReport.Matrix(measurement)))
        #expect(Set(suite.keys) == ["passed", "failed", "runs", "matrix"])
        #expect(suite["passed"] as? Int == 0 && suite["failed"] as? Int == 1, "a run that could not start counts as failed")
        let runs = try #require(suite["runs"] as? [[String: Any]])
        #expect(runs.count == 1)
        #expect(runs.first?["passed"] as? Bool == false && runs.first?["error"] as? String == "cannot start the relay")
        #expect(Set(runs.first.map { Array($0.keys) } ?? []) == ["scenario", "file", "driver", "seed", "passed", "error"])
        #expect(runs.first?["driver"] as? String == "naive" && runs.first?["seed"] as? Int == 7, "\(runs)")
        let matrix = try #require(suite["matrix"] as? [String: Any])
        #expect(matrix["drivers"] as? [String] == ["naive", "resilient"])
        let cells = try #require(matrix["cells"] as? [String: [String: [String: Any]]])
        #expect(cells["lockscreen"]?["naive"]?["cell"] as? String == "FAIL error")
        #expect(cells["lockscreen"]?["naive"]?["runs"] as? [String] == ["FAIL error"])
        #expect(cells["lockscreen"]?["resilient"] == nil && cells["outage"]?.count == 1)
        #expect(try Self.object(JSONReport.Suite(runs: [])).keys.sorted() == ["failed", "passed", "runs"])
    }
}
