import Testing
@testable import NetsimCore

/// The line an interrupted `netsim run` or `netsim test` prints counts what its cleanup did, by
/// kind. It said "their clients sent SIGTERM, … their packet links removed" whatever there was,
/// and "nothing was running" for a run with an in-process client.
@Suite("what an interruption undid")
struct InterruptCleanupTests {
    @Test func theLineCountsEachKindInOneOrderAndLeavesOutWhatDidNotRun() {
        #expect(InterruptCleanup.describe([:]) == nil)
        #expect(InterruptCleanup.describe([.capture: 2, .run: 2, .execClient: 1])
                == "2 runs stopped, 1 exec client sent SIGTERM (SIGKILL 1 s later), 2 captures closed")
        #expect(InterruptCleanup.describe([.namespace: 1, .resolverFiles: 1])
                == "1 packet link namespace deleted, 1 namespace resolver folder removed")
    }
}
