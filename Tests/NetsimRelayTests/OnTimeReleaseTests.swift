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

    /// The executor's half: a timer that fires before its deadline waits it out before the release
    /// goes (the model only says how long; this checks the wait really happens, on the real clock).
    @Test func aTimerThatFiresEarlyWaitsOutItsDeadline() {
        let timing = LoopReleaseTiming()
        let clock = SystemClock()
        let now = clock.now()
        let deadline = now + 300_000
        let released = timing.fired(armedAt: now - 10_000_000, armedFor: now, deadline: deadline, now: now)
        #expect(released >= deadline)
        #expect(clock.now() >= deadline)
        #expect(timing.spunNanoseconds == 300_000)
        // Due already: no wait, the time it was given.
        let late = clock.now()
        #expect(timing.fired(armedAt: late - 10_000_000, armedFor: late - 100_000, deadline: late - 50_000, now: late) == late)
    }
}
