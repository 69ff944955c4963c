import Foundation
import Glibc
import NetsimLoopback
import Testing

/// netsim needs no privilege outside link mode packet: a scenario through the relay, the
/// built-in server and the reference client runs as an ordinary user. (Each socket once asked
/// for TCP_NODELAY at the socket level, which is SO_DEBUG there: root may set it, anyone else
/// gets EACCES, and every connection failed — CI runs as root and never saw it.)
@Suite("netsim without root")
struct UnprivilegedRunTests {
    /// Run as root with setpriv present (CI): the test drops to `nobody`. As an ordinary user every
    /// other test already runs without privilege.
    static let canDrop = geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")

    @Test(.enabled(if: canDrop, "needs root and setpriv to drop privilege"))
    func aRelayScenarioPassesAsNobody() async throws {
        // Copies nobody can reach wherever the checkout is (a root home is 0700).
        let shared = try SharedCopy([NetsimProcess.executable, NetsimProcess.root.appendingPathComponent("Scenarios/server-fin.scn")])
        defer { shared.remove() }
        let process = try WatchedProcess(
            URL(fileURLWithPath: "/usr/bin/setpriv"),
            ["--reuid=65534", "--regid=65534", "--clear-groups", "env", "HOME=/tmp",
             shared.path("netsim"), "run", shared.path("server-fin.scn"), "--client", "resilient"],
            directory: shared.directory)
        let result = try await process.result(within: .seconds(120))
        #expect(result.status == 0, "\(result.standardOutput)\n\(result.standardError)")
        #expect(result.standardOutput.contains("PASS server-fin"), "\(result.standardOutput)")
    }

    /// A packet-link scenario in a suite run without root is skipped, said, and in the JUnit
    /// report as `<skipped>` with why: CI's count of tests stays the same on every runner (QA
    /// 58: it vanished from the reports and the counts).
    @Test(.enabled(if: canDrop, "needs root and setpriv to drop privilege"))
    func aPacketScenarioIsSkippedInTheReportsAsNobody() async throws {
        let scenarios = NetsimProcess.root.appendingPathComponent("Scenarios")
        let shared = try SharedCopy([NetsimProcess.executable, scenarios.appendingPathComponent("server-fin.scn"), scenarios.appendingPathComponent("handover.scn")])
        defer { shared.remove() }
        let reports = shared.directory.appendingPathComponent("reports")  // where nobody may write
        try FileManager.default.createDirectory(at: reports, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o777])
        let junit = reports.appendingPathComponent("junit.xml").path
        let process = try WatchedProcess(
            URL(fileURLWithPath: "/usr/bin/setpriv"),
            ["--reuid=65534", "--regid=65534", "--clear-groups", "env", "HOME=/tmp",
             shared.path("netsim"), "test", shared.path("server-fin.scn"), shared.path("handover.scn"), "--client", "resilient", "--junit", junit],
            directory: shared.directory)
        let result = try await process.result(within: .seconds(120))
        let out = result.standardOutput
        #expect(result.status == 0, "\(out)\n\(result.standardError)")
        #expect(out.contains("netsim test: skipping handover: link mode packet needs root"), "\(out)")
        let xml = (try? String(contentsOfFile: junit, encoding: .utf8)) ?? "no report"
        #expect(xml.contains(#"tests="2" failures="0" errors="0" skipped="1""#) && xml.contains(#"<skipped message="skipped: link mode packet needs root"#), "\(xml)")
        #expect(out.hasSuffix("1 skipped (not runnable here, see above)\n1 passed, 0 failed\n"), "\(out)")
    }
}
