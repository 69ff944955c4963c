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
    /// is lifted 1.5 s after the relay started (what was left of its window), not 101.5 s. Timed
    /// by the log's own stamps (the rule's `fault_added` as the relay started, its lift); the
    /// 30 s wait only needs to tell those apart, so a loaded machine cannot fail it.
    @Test func aFaultAlreadyInForceLastsWhatIsLeftOfItsWindow() async throws {
        let timeline = RelayTimeline(start: SystemClock().now() - 100_000_000_000)  // began 100 s ago
        let relay = try await Self.joining(timeline, with: FaultRule(.blackhole, trigger: .at(.zero), lasts: .milliseconds(101_500)))
        let lifted = await relay.eventLog.waitFor(timeout: .seconds(30)) { if case .faultLifted = $0.kind { true } else { false } }
        await relay.stop()
        let added = try #require(relay.eventLog.events.first { if case .faultAdded = $0.kind { true } else { false } })
        let after = Duration.nanoseconds(try #require(lifted, "the fault was not lifted within 30 s of the relay joining").time - added.time)
        #expect(after > .seconds(1), "lifted \(after) after the relay joined: too soon")
    }

    /// A fault whose window ended before the relay joined never acts on it.
    @Test func aFaultWhoseWindowHasPassedNeverActs() async throws {
        let timeline = RelayTimeline(start: SystemClock().now() - 1_000_000_000)  // began 1 s ago
        let relay = try await Self.joining(timeline, with: FaultRule(.blackhole, trigger: .at(.zero), lasts: .milliseconds(100)))
        let activated = relay.lock.withLock { relay.rules.values.filter { $0.activatedAt != nil }.map(\.rule.description) }
        await relay.stop()
        #expect(activated.isEmpty, "\(activated)")
    }
}
