import Foundation
import NetsimCore
import NetsimFaults
import Testing
@testable import NetsimRelay

/// A relay on a shared ``RelayTimeline`` (the proxy's per-destination relays) counts `at` faults
/// from the timeline's start, not its own.
@Suite("a relay joining a shared timeline")
struct RelayTimelineTests {
    /// A fault in force from 0 s to 2 s on the timeline, a relay joining at 1 s: the fault is
    /// lifted 1 s after the relay started (what was left of its window), not 2 s. The bound
    /// (1.8 s) leaves 0.8 s for a late timer; the old behaviour lifts at 2 s or later.
    @Test func aFaultAlreadyInForceLastsWhatIsLeftOfItsWindow() async throws {
        let timeline = RelayTimeline()
        // The scenario's own time, not a wait for something: the relay joins 1 s in.
        try await Task.sleep(for: .seconds(1))
        let log = EventLog()
        let rule = FaultRule(.blackhole, trigger: .at(.zero), lasts: .seconds(2))
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
        #expect(after < .milliseconds(1800), "lifted \(after) after the relay joined")
        #expect(after > .milliseconds(500), "lifted \(after) after the relay joined: too soon")
    }

    /// A fault whose window ended before the relay joined never acts on it.
    @Test func aFaultWhoseWindowHasPassedNeverActs() async throws {
        let timeline = RelayTimeline()
        try await Task.sleep(for: .milliseconds(300))  // the scenario's own time: past the window
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
