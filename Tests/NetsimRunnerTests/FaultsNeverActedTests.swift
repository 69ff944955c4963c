import NetsimCore
@testable import NetsimRunner
import NetsimScenario
import Testing

/// A fault the run never saw act makes a pass say less than it seems, and the report says so
/// (QA 64: an HTTP/2 fault under an HTTP/1.1 client passed with nothing said).
@Suite("Faults that never acted")
struct FaultsNeverActedTests {
    static let source = oneRequestScenario("idle-faults", timeline: """
          - fault: stale
            target: existing
          - request: a
            path: /a
          - fault: blackhole
            target: new
        """, expect: """
          - request: a
            status: 200
        """)

    @Test func aRealRunNamesEachFaultThatDidNothingAndItsLine() async throws {
        let result = try await run(scenario(Self.source))
        #expect(result.passed, "\(TextReport.render(result))")
        #expect(result.faultsThatNeverActed == ["stale (line 10)", "blackhole (line 14)"])
        #expect(TextReport.render(result).contains("note: faults stale (line 10), blackhole (line 14) never acted in this run, so no check saw them"))
    }

    /// A fault that acted on one connection is not listed; a `refuse` acts by closing the listener.
    @Test func aFaultThatActedAnywhereIsNotListed() throws {
        var result = RunResult(scenario: try scenario(Self.source), driverName: "naive", outcomes: [], serverRequests: [], events: [],
                               verdicts: [], duration: 0, clientLog: "")
        result.events = [
            Event(time: 1, connection: ConnectionID(1), kind: .faultFired(fault: FaultName("stale"), detail: "\(Event.nothingDone): none open")),
            Event(time: 2, connection: ConnectionID(2), kind: .faultFired(fault: FaultName("blackhole"), detail: "holds every byte")),
        ]
        #expect(result.faultsThatNeverActed == ["stale (line 10)"])
    }
}
