import NetsimRunner
import NetsimScenario
import Testing

/// `every:` starts a step's requests on a timer, as an app that polls does: each on time,
/// whether or not the ones before have been answered; the next step waits for them all.
@Suite("Requests on a timer (every)")
struct PeriodicRequestTests {
    static let source = """
        name: polling
        description: a slow answer polled every 200 ms
        upstream:
          routes:
            - path: /slow
              delay: 600ms
              body: late
        client:
          driver: resilient
          timeout: 5s
          pool: 4
        timeline:
          - request: poll
            path: /slow
            count: 4
            every: 200ms
          - request: next
            path: /slow
        expect:
          - request: poll
            status: 200
            requests: 4
        """

    @Test func eachRequestStartsOnTimeWhateverIsInFlight() async throws {
        let result = try await run(try scenario(Self.source))
        #expect(result.passed, "\(result.failures.map { "\($0.title): \($0.actual)" })")
        let polls = result.outcomes.filter { $0.name == "poll" }.sorted { $0.index < $1.index }
        try #require(polls.count == 4)
        let every: Int64 = 200_000_000
        for (i, poll) in polls.enumerated() {
            // Never early; late only by the machine's scheduling (the bound is loose on purpose).
            let offset = poll.started - polls[0].started
            #expect(offset >= Int64(i) * every - 2_000_000 && offset < Int64(i) * every + 400_000_000, "request \(i) started \(offset) ns after the first")
        }
        // The second started while the first was still waiting for its 600 ms answer.
        #expect(polls[1].started < polls[0].finished, "the timer waited for an answer")
        let next = try #require(result.outcomes.first { $0.name == "next" })
        #expect(next.started >= polls.map(\.finished).max()!, "the next step waits for every request of the one before")
    }
}
