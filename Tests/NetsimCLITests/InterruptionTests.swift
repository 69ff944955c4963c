import Foundation
import NetsimLoopback
import Testing

/// Ctrl-C in the middle of `netsim run`: exit 130 with one line saying what was stopped, and the
/// capture so far a whole pcap. Before, SIGINT killed netsim at once, and the pcap was cut at its
/// writer's buffer (8 KiB), unreadable ("the file is truncated").
@Suite("an interrupted run")
struct InterruptionTests {
    @Test func ctrlCMidRunClosesTheCaptureAndExits130() async throws {
        let pcap = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-interrupted-\(UUID()).pcap")
        defer { try? FileManager.default.removeItem(at: pcap) }
        let run = try WatchedProcess(NetsimProcess.executable, ["run", "Scenarios/lockscreen-long.scn", "--pcap", pcap.path],
                                     directory: NetsimProcess.root)
        // The timeline's first wait: requests have gone through the relay, more are to come.
        _ = try await run.line(.output, within: .seconds(60)) { $0.contains("▶ wait") }
        let sent = ContinuousClock.now
        kill(run.processIdentifier, SIGINT)
        let result = try await run.result(within: .seconds(20))
        #expect(result.status == 130, "exited \(ContinuousClock.now - sent) after the SIGINT; it said:\n\(result.standardOutput)\n\(result.standardError)")
        #expect(result.standardError.contains("netsim run: interrupted by SIGINT; the runs in flight were stopped"), "\(result.standardError)")
        let profile = try await NetsimProcess.run(["profile", pcap.path])
        #expect(profile.status == 0, "the capture so far is a whole pcap: \(profile.stderr)")
        #expect(profile.stdout.contains("TCP flows"), "\(profile.stdout)")
    }
}
