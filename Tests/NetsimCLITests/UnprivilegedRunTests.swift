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
}
