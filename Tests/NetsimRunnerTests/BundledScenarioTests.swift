import Foundation
import NetsimCore
import NetsimRunner
import NetsimScenario
import Testing

@Suite("Bundled scenarios")
struct BundledScenarioTests {
    static let lockscreen = repositoryRoot + "/Scenarios/lockscreen.scn"

    @Test func lockscreenPassesWithTheReferenceClient() async throws {
        let parsed = try ScenarioParser.parse(file: Self.lockscreen)
        let result = try await run(parsed)
        #expect(result.passed, "\(TextReport.render(result))")
        // The fault really bit: the first request after unlock met a dead connection.
        #expect(result.events.contains { if case .faultFired("stale", let detail) = $0.kind { detail.contains("swallowed") } else { false } })
        #expect(result.driverName.contains("urllib3"))
    }

    @Test func lockscreenFailsWhenTheClientDoesNotRetry() async throws {
        let source = try String(contentsOfFile: Self.lockscreen, encoding: .utf8).replacingOccurrences(of: "retries: 1", with: "retries: 0")
        let result = try await run(try scenario(source, file: "Scenarios/lockscreen.scn"))
        #expect(!result.passed)
        let failed = Set(result.failures.map(\.title))
        #expect(failed.contains("request after-unlock: error none"))
        #expect(failed.contains("request after-unlock: connection new"))
        let reset = result.failures.first { $0.title == "request after-unlock: error none" }
        #expect(reset?.actual.contains("reset") == true, "\(reset?.actual ?? "")")
        // The verdict points at the `error: none` line of the after-unlock expectation.
        let lines = source.components(separatedBy: "\n")
        let expectStart = lines.firstIndex { $0.hasPrefix("  - request: after-unlock") } ?? 0
        let errorLine = (lines[expectStart...].firstIndex { $0.trimmingCharacters(in: .whitespaces) == "error: none" } ?? -1) + 1
        #expect(reset?.check.location == NetsimScenario.SourceLocation(file: "Scenarios/lockscreen.scn", line: errorLine, column: 5))
    }

    @Test func theSameSeedGivesTheSameFaultDecisions() async throws {
        // Half of the connections are reset, chosen from the seed.
        let source = """
            name: seeded
            description: probability decisions follow the seed
            seed: 11
            upstream:
              routes:
                - path: /
                  body: ok
            client:
              driver: exec
              command: [python3, Fixtures/clients/urllib3_client.py]
              retries: 0
            timeline:
              - fault: rst
                target: new
                probability: 50%
              - request: r
                path: /
                headers: { Connection: close }
                count: 12
            expect:
              - request: r
                status: 200
            """
        func pattern(_ seed: UInt64?) async throws -> [Bool] {
            try await run(try scenario(source), seed: seed).outcomes.map { $0.response.error == nil }
        }
        let first = try await pattern(nil)
        #expect(try await pattern(nil) == first)
        #expect(first.contains(true) && first.contains(false))
        #expect(try await pattern(12) != first)
    }
}
