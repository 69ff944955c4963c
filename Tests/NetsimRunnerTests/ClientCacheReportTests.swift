import NetsimRunner
import NetsimScenario
import Testing

/// An answer the client gave from its own cache is reported as such: it looked like the server's
/// answer in the live lines, the text and HTML reports and `--json` (QA 52), where the cache is
/// the very thing the outage-cache incident is about.
@Suite("answers from the client's own cache")
struct ClientCacheReportTests {
    @Test func aCachedAnswerSaysItNeverWentOnTheNetwork() async throws {
        let parsed = try scenario("""
            name: cached
            description: The second request is the reference client's cache hit.
            upstream:
              routes:
                - path: /news
                  headers: { Cache-Control: max-age=60 }
                  body: fresh
            client:
              driver: naive
            timeline:
              - request: first
                path: /news
              - request: again
                path: /news
            expect:
              - request: again
                connection: new
            """)
        let result = try await run(parsed)
        let first = try #require(result.outcomes.first { $0.name == "first" })
        let again = try #require(result.outcomes.first { $0.name == "again" })
        #expect(!first.response.fromClientCache)
        #expect(!first.summary.contains("cache"), "\(first.summary)")
        #expect(again.response.fromClientCache)
        #expect(again.response.status == 200 && again.response.body == "fresh")
        #expect(again.summary.hasPrefix("200 in ") && again.summary.hasSuffix(" from the client's own cache (not on the network)"), "\(again.summary)")
        // A connection check names why there is no connection.
        let verdict = try #require(result.verdict("request again: connection new"))
        #expect(!verdict.passed)
        #expect(verdict.actual.contains("again #1: it went over no relay connection: 200 in "), "\(verdict.actual)")
        // --json carries it for the cached answer only.
        #expect(JSONReport.Request(again).fromClientCache == true)
        #expect(JSONReport.Request(first).fromClientCache == nil)
        // Only the first request reached the server.
        #expect(result.serverRequests.count == 1, "\(result.serverRequests)")
    }
}
