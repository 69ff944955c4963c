import Foundation
import NetsimCore
import NetsimFaults
import Testing
@testable import NetsimRelay

/// A relay on a shared ``RelayTimeline`` (the proxy's per-destination relays) counts `at` faults
/// from the timeline's start, not its own.
@Suite("a relay joining a shared timeline")
struct RelayTimelineTests {
    /// A relay to nowhere (it only needs its faults) on `timeline`, with `rule`, started.
    static func joining(_ timeline: RelayTimeline, with rule: FaultRule) async throws -> Relay {
        let relay = Relay(configuration: RelayConfiguration(upstream: Endpoint(host: "127.0.0.1", port: 9), faults: [rule]),
                          timeline: timeline)
        try await relay.startWithoutListener()
        return relay
    }

    /// A fault in force from 0 s to 101.5 s on the timeline, a relay joining at 100 s: the fault
    /// is lifted 1.5 s after the relay started (what was left of its window), not 101.5 s. The
    /// lift is the relay's own (the timeline logs the rule's events, ``RelayTimeline/announce(_:to:on:)``),
    /// so the test watches the relay's rules; the 30 s bound only needs to tell 1.5 s from
    /// 101.5 s, so a loaded machine cannot fail it.
    @Test func aFaultAlreadyInForceLastsWhatIsLeftOfItsWindow() async throws {
        let timeline = RelayTimeline(start: SystemClock().now() - 100_000_000_000)  // began 100 s ago
        let joined = ContinuousClock.now
        let relay = try await Self.joining(timeline, with: FaultRule(.blackhole, trigger: .at(.zero), lasts: .milliseconds(101_500)))
        let active = { relay.lock.withLock { relay.rules.values.contains { $0.activatedAt != nil } } }
        #expect(active(), "in force when the relay joins inside its window")
        while active(), ContinuousClock.now - joined < .seconds(30) { try await Task.sleep(for: .milliseconds(20)) }
        let after = ContinuousClock.now - joined
        let stillActive = active()
        await relay.stop()
        #expect(!stillActive, "the fault was not lifted within 30 s of the relay joining")
        #expect(after > .seconds(1), "lifted \(after) after the relay joined: too soon")
        #expect(!relay.eventLog.events.contains { if case .faultAdded = $0.kind { true } else { false } },
                "a relay on a shared timeline leaves fault_added to the timeline")
    }

    /// A fault whose window ended before the relay joined never acts on it.
    @Test func aFaultWhoseWindowHasPassedNeverActs() async throws {
        let timeline = RelayTimeline(start: SystemClock().now() - 1_000_000_000)  // began 1 s ago
        let relay = try await Self.joining(timeline, with: FaultRule(.blackhole, trigger: .at(.zero), lasts: .milliseconds(100)))
        let kept = relay.lock.withLock { relay.rules.values.map(\.rule.description) }
        await relay.stop()
        #expect(kept.isEmpty, "\(kept)")
    }
}
