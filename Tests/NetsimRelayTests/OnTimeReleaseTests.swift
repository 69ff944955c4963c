import Foundation
import NetsimCore
import NetsimLink
import NetsimLoopback
@testable import NetsimRelay
import Testing

/// The relay arms release timers early and spins to the deadline (``EarlyWakeUp``): that must
/// only ever take lateness away, never release a byte before its time. Timings here are lower
/// bounds only (how late is the bench's business, docs/benchmarks.md).
@Suite struct OnTimeReleaseTests {
    @Test func releasesArmedEarlyNeverDeliverBeforeTheirTime() async throws {
        let server = try LoopbackServer.echo()
        defer { server.stop() }
        let link = LinkConfiguration(up: DirectionLink(latency: .milliseconds(20)), down: DirectionLink(latency: .milliseconds(20)))
        try await withRelay(upstream: server.endpoint, link: link) { relay, endpoint in
            // 25 round trips: the loop learns a lead from the first long sleeps and arms the
            // later release timers early, spinning when they wake before their deadline.
            let times = try await offload { () -> [Double] in
                let socket = try BlockingSocket.connect(to: endpoint)
                defer { socket.close() }
                return try (0..<25).map { _ in
                    let start = ContinuousClock.now
                    try socket.send("x")
                    _ = try socket.receive(exactly: 1)
                    return elapsed(since: start)
                }
            }
            #expect(times.allSatisfy { $0 >= 0.040 }, "every round trip takes 2 × 20 ms at least: \(times)")
        }
    }

    /// The executor's half: a timer that fires before its deadline releases at the deadline and
    /// waits it out before acting (the model only says how long; this checks the wait really
    /// happens, on the real clock). The decision comes first, without waiting.
    @Test func aTimerThatFiresEarlyWaitsOutItsDeadline() {
        let timing = ReleaseTiming()
        let clock = SystemClock()
        let now = clock.now()
        let deadline = now + 300_000
        let releaseAt = timing.fired(armedAt: now - 10_000_000, armedFor: now, deadline: deadline, now: now)
        #expect(releaseAt == deadline)
        #expect(timing.spunNanoseconds == 300_000)
        timing.wait(until: releaseAt)
        #expect(clock.now() >= deadline)
        // Due already: released at the time it was given, and waiting for it returns at once.
        let late = clock.now()
        #expect(timing.fired(armedAt: late - 10_000_000, armedFor: late - 100_000, deadline: late - 50_000, now: late) == late)
    }
}
