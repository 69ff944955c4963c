import Foundation
import Glibc
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
        let result = try await NetsimProcess.run(
            ["run", "Scenarios/server-fin.scn", "--client", "resilient"],
            as: ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "env", "HOME=/tmp"])
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("PASS server-fin"), "\(result.stdout)")
    }
}
