import Foundation
import NetsimRunner
import NetsimScenario
import Testing

/// What netsim answers in an exec client's place (it crashed, never answered) is not the
/// client's own classification: no request check passes on it. A crashed client's requests
/// passed `error: other`, `error: any` and `within`, and the run passed with no request sent.
@Suite("netsim's stand-in answers pass no check")
struct StandInAnswerTests {
    @Test func aCrashedClientsRequestsPassNoErrorOrTimeCheck() async throws {
        let result = try await run(scenario("""
            name: crashed
            description: the client crashes on its first request
            upstream:
              routes:
                - path: /g
                  body: g
            client:
              driver: exec
              command: [python3, Fixtures/clients/crashing_client.py]
              timeout: 2s
            timeline:
              - request: g
                path: /g
                count: 2
            expect:
              - request: g
                error: other
              - request: g
                error: any
              - request: g
                within: 5s
              - request: g
                requests: 2
            """))
        #expect(result.outcomes.count == 2 && result.outcomes.allSatisfy { $0.response.error == .other }, "\(result.outcomes.map(\.summary))")
        for title in ["request g: error other", "request g: error any", "request g: within 5s"] {
            let verdict = try #require(result.verdict(title), "\(result.verdicts.map(\.title))")
            #expect(!verdict.passed, "\(title): \(verdict.actual)")
            #expect(verdict.actual.contains("the client gave no answer of its own; netsim's stand-in: other after"), "\(verdict.actual)")
            #expect(verdict.actual.contains("the exec client exited before answering") || verdict.actual.contains("the exec client has exited"), "\(verdict.actual)")
        }
        #expect(result.verdicts.first { $0.title.hasPrefix("request g: requests") }?.passed == true, "the requests did run: \(result.verdicts.map(\.title))")
        #expect(!result.passed)
    }
}
