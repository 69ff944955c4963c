import Foundation
import NetsimCore
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
              delay: 2s
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

    /// Counts the requests started and not finished, as `netsim run`'s progress line does.
    final class InFlight: RunObserver, @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        private(set) var most = 0
        private(set) var starts: [String] = []
        func started(_ scenario: Scenario, driver: String, relay: Endpoint, seed: UInt64) {}
        func stepFired(_ step: TimelineStep, at nanoseconds: Int64, description: String) {}
        func requestStarted(name: String, index: Int) {
            lock.withLock { count += 1; most = max(most, count); starts.append("\(name)#\(index)") }
        }
        func requestFinished(_ outcome: RequestOutcome) { lock.withLock { count -= 1 } }
        var now: Int { lock.withLock { count } }
    }

    @Test func eachRequestStartsOnTimeWhateverIsInFlight() async throws {
        let inFlight = InFlight()
        let result = try await ScenarioRunner.run(try scenario(Self.source), options: RunOptions(workingDirectory: repositoryRoot, observer: inFlight))
        // Observers hear of each request as it starts, in order; 2 s answers polled every
        // 200 ms overlap (all four at a time, unless the machine is very late), and none is left.
        #expect(inFlight.starts == ["poll#0", "poll#1", "poll#2", "poll#3", "next#0"], "\(inFlight.starts)")
        #expect((2...4).contains(inFlight.most) && inFlight.now == 0, "most \(inFlight.most), left \(inFlight.now)")
        #expect(result.passed, "\(result.failures.map { "\($0.title): \($0.actual)" })")
        let polls = result.outcomes.filter { $0.name == "poll" }.sorted { $0.index < $1.index }
        try #require(polls.count == 4)
        let every: Int64 = 200_000_000
        // The timer counts from the step (its event is logged before the timer starts), not
        // from the first request, which may itself start a little late.
        let step = try #require(result.events.first { if case .step(let text) = $0.kind { text.hasPrefix("request poll") } else { false } })
        for (i, poll) in polls.enumerated() {
            // Never early; late only by the machine's scheduling. The bound is loose on purpose:
            // the whole runner suite at once made a start 435 ms late. A timer that waited for
            // the 2 s answers would start request 1 at 2 s.
            let offset = poll.started - step.time
            #expect(offset >= Int64(i) * every - 2_000_000 && offset < Int64(i) * every + 1_200_000_000, "request \(i) started \(offset) ns after the step")
        }
        // The second started while the first was still waiting for its 2 s answer.
        #expect(polls[1].started < polls[0].finished, "the timer waited for an answer")
        let next = try #require(result.outcomes.first { $0.name == "next" })
        #expect(next.started >= polls.map(\.finished).max()!, "the next step waits for every request of the one before")
    }
}
