import Foundation
import NetsimCore
import NetsimFaults
import Testing
@testable import NetsimRelay

/// A relay on a shared ``RelayTimeline`` (the proxy's per-destination relays) counts `at` faults
/// from the timeline's start, not its own.
@Suite("a relay joining a shared timeline")
struct RelayTimelineTests {
    /// A fault in force from 0 s to 6 s on the timeline, a relay joining at 5 s: the fault is
    /// lifted 1 s after the relay started (what was left of its window), not 6 s. The bound
    /// (4 s) leaves 3 s for a late timer; the old behaviour lifts at 6 s or later.
    @Test func aFaultAlreadyInForceLastsWhatIsLeftOfItsWindow() async throws {
        let timeline = RelayTimeline(start: SystemClock().now() - 5_000_000_000)  // began 5 s ago
        let log = EventLog()
        let rule = FaultRule(.blackhole, trigger: .at(.zero), lasts: .seconds(6))
        let relay = Relay(configuration: RelayConfiguration(upstream: Endpoint(host: "127.0.0.1", port: 9), faults: [rule]),
                          eventLog: log, timeline: timeline)
        let joined = ContinuousClock.now
        try await relay.startWithoutListener()
        var lifted: ContinuousClock.Instant?
        while lifted == nil, ContinuousClock.now - joined < .seconds(10) {
            if log.events.contains(where: { if case .faultLifted = $0.kind { true } else { false } }) { lifted = .now }
            try await Task.sleep(for: .milliseconds(5))  // polling the log, with a deadline
        }
        await relay.stop()
        let after = try #require(lifted, "the fault was never lifted") - joined
        #expect(after < .seconds(4), "lifted \(after) after the relay joined")
        #expect(after > .milliseconds(500), "lifted \(after) after the relay joined: too soon")
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
