import Foundation
import NetsimLoopback
import Testing

/// `netsim run … | head -1`: once the reader has gone, the run goes on quietly and exits with
/// its own status. It crashed ("Fatal error: … Broken pipe", a backtrace, status 132): its live
/// lines went through `FileHandle.write`, which traps on any error.
@Suite("netsim run into a closed pipe")
struct ClosedOutputTests {
    @Test func aReaderThatLeavesEarlyDoesNotCrashTheRun() async throws {
        let command = "\"$0\" run Scenarios/outage-503.scn --client resilient | head -1; echo \"status ${PIPESTATUS[0]}\""
        let result = try await WatchedProcess(URL(fileURLWithPath: "/bin/bash"), ["-c", command, NetsimProcess.executable.path],
                                              directory: NetsimProcess.root).result(within: .seconds(120))
        #expect(result.standardOutput.hasPrefix("netsim run Scenarios/outage-503.scn: outage-503\n"), "\(result.standardOutput)")
        // The run's own verdict (0 passed, 1 failed), not a crash's 132.
        #expect(result.standardOutput.hasSuffix("status 0\n") || result.standardOutput.hasSuffix("status 1\n"),
                "\(result.standardOutput)\n\(result.standardError)")
        #expect(!result.standardError.contains("Fatal error"), "\(result.standardError)")
    }
}
