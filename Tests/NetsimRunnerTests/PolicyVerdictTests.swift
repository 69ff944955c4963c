import Foundation
@testable import NetsimRunner
import NetsimScenario
import Testing

/// `judges: policy` (docs/scenario-format.md): a check of an application policy is reported and
/// put in the matrix apart from the library's own behaviour.
@Suite("judges: library or policy")
struct PolicyVerdictTests {
    static let source = """
        name: policy-apart
        description: the library's check passes, the policy's fails
        upstream:
          routes:
            - path: /feed
              body: fed
        client:
          driver: resilient
          timeout: 5s
        timeline:
          - request: one
            path: /feed
        expect:
          - request: one
            status: 200
          - request: one
            judges: policy
            status: 201
        """

    @Test func theParserReadsJudgesAndDefaultsToTheLibrary() throws {
        let parsed = try scenario(Self.source)
        #expect(parsed.expectations.map(\.judges) == [.library, .policy])
        #expect(throws: ScenarioErrors.self) {
            try ScenarioParser.parse(source: Self.source.replacingOccurrences(of: "judges: policy", with: "judges: app"), file: "bad.scn")
        }
    }

    @Test func aRunWhoseOnlyFailureIsPolicyIsAPolicyCell() async throws {
        let result = try await run(try scenario(Self.source))
        #expect(!result.passed)
        #expect(MatrixOutcome(result) == .policy("status"))
        let text = TextReport.render(result)
        #expect(text.contains("✘ request one: status 201 [app policy]"), "\(text)")
        #expect(text.contains("1 of 2 checks failed, all of them app policy: the library's own behaviour passed"), "\(text)")
        // The HTML page marks it as the text does (its data is JSON inside the page).
        #expect(HTMLReport.render(result).contains("request one: status 201 [app policy]"))
        #expect(JUnitReport.message(for: result) == "1 of 2 checks failed, all of them app policy: the library's own behaviour passed, first: request one: status 201")
    }

    @Test func policyCellsReadBackAndSortBetweenPassAndFail() {
        #expect(MatrixOutcome(text: "policy FAIL status") == .policy("status"))
        #expect(MatrixOutcome.policy("status").description == "policy FAIL status")
        #expect(MatrixCell(runs: [.fail("error"), .policy("status"), .pass]).description == "flaky: pass, policy FAIL status, FAIL error")
        #expect(MatrixCell(text: "flaky: pass, policy FAIL status") == .flaky([.pass, .policy("status")]))
    }
}
