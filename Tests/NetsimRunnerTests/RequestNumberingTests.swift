import NIOConcurrencyHelpers
import NetsimHTTP
import NetsimRunner
import NetsimScenario
import Testing

/// A driver's request ids and labels follow the scenario, whatever order parallel requests
/// start in. They were numbered as they started, so a client's log said `#11` for the report's
/// `#10` (QA 43), and an exec client's ids changed from run to run.
@Suite("request numbering")
struct RequestNumberingTests {
    /// Records what it is asked; answers 200 at once.
    final class RecordingClient: ClientDriver {
        let seen = NIOLockedValueBox<[(id: Int, label: String, tag: String)]>([])
        var name: String { "recording" }
        func perform(_ request: DriverRequest) async throws -> DriverResponse {
            let tag = request.headers.first { $0.name == ServerRequest.tagHeader }?.value ?? ""
            seen.withLockedValue { $0.append((request.id, request.label, tag)) }
            return .completed(status: 200, headers: [], body: [])
        }
        func ready(timeout: Duration) async throws {}
        func shutdown() async {}
        var log: String { get async { "" } }
    }

    @Test func idsAndLabelsAreTheScenariosOrder() async throws {
        let parsed = try scenario("""
            name: numbering
            description: Parallel requests numbered in the scenario's order.
            upstream:
              routes:
                - path: /a
            client:
              driver: naive
            timeline:
              - request: first
                path: /a
                count: 2
              - request: many
                path: /a
                count: 12
                parallel: 12
              - request: last
                path: /a
            expect:
              - request: many
                status: 200
            """)
        let client = RecordingClient()
        let result = try await ScenarioRunner.run(parsed, options: RunOptions(
            workingDirectory: repositoryRoot, inProcess: InProcessClient(name: "recording") { _ in client }))
        #expect(result.passed)
        let seen = client.seen.withLockedValue { $0 }
        #expect(seen.count == 15)
        for request in seen {
            // The tag carries the report's name and index; the label and the id must agree with it.
            let parts = request.tag.split(separator: "#")
            let name = String(try #require(parts.first)), number = Int(try #require(parts.last)) ?? 0
            #expect(request.label == "\(name) #\(number)")
            let first = ["first": 1, "many": 3, "last": 15][name] ?? 0
            #expect(request.id == first + number - 1, "\(request)")
        }
    }
}
