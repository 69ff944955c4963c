import Foundation
import NetsimCore
import NetsimFaults
import Testing
@testable import NetsimRelay

/// A relay on a shared ``RelayTimeline`` (the proxy's per-destination relays) counts `at` faults
/// from the timeline's start, not its own.
@Suite("a relay joining a shared timeline")
struct RelayTimelineTests {
    /// A fault in force from 0 s to 101.5 s on the timeline, a relay joining at 100 s: the fault
    /// is lifted 1.5 s after the relay started (what was left of its window), not 101.5 s. The
    /// bound (30 s) only needs to tell those apart, so a loaded machine's late timers and
    /// starved tasks cannot fail it (an earlier 4 s bound saw a lift 5.8 s late under CI load).
    @Test func aFaultAlreadyInForceLastsWhatIsLeftOfItsWindow() async throws {
        let timeline = RelayTimeline(start: SystemClock().now() - 100_000_000_000)  // began 100 s ago
        let log = EventLog()
        let rule = FaultRule(.blackhole, trigger: .at(.zero), lasts: .milliseconds(101_500))
        let relay = Relay(configuration: RelayConfiguration(upstream: Endpoint(host: "127.0.0.1", port: 9), faults: [rule]),
                          eventLog: log, timeline: timeline)
        let joined = ContinuousClock.now
        try await relay.startWithoutListener()
        var lifted: ContinuousClock.Instant?
        while lifted == nil, ContinuousClock.now - joined < .seconds(30) {
            if log.events.contains(where: { if case .faultLifted = $0.kind { true } else { false } }) { lifted = .now }
            try await Task.sleep(for: .milliseconds(5))  // polling the log, with a deadline
        }
        await relay.stop()
        let after = try #require(lifted, "the fault was not lifted within 30 s of the relay joining") - joined
        #expect(after > .seconds(1), "lifted \(after) after the relay joined: too soon")
    }

    /// A fault whose window ended before the relay joined never acts on it.
    @Test func aFaultWhoseWindowHasPassedNeverActs() async throws {
        let timeline = RelayTimeline(start: SystemClock().now() - 1_000_000_000)  // began 1 s ago
        let log = EventLog()
        let rule = FaultRule(.blackhole, trigger: .at(.zero), lasts: .milliseconds(100))
        let relay = Relay(configuration: RelayConfiguration(upstream: Endpoint(host: "127.0.0.1", port: 9), faults: [rule]),
                          eventLog: log, timeline: timeline)
        try await relay.startWithoutListener()
        let activated = relay.lock.withLock { relay.rules.values.filter { $0.activatedAt != nil }.map(\.rule.description) }
        await relay.stop()
        #expect(activated.isEmpty, "\(activated)")
    }
}
