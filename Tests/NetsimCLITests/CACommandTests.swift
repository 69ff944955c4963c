import Foundation
import NetsimLoopback
import NetsimTLS
import Testing

/// `netsim ca` as a person runs it: the CA made on first use in `$NETSIM_HOME`, its fingerprint
/// as OpenSSL computes it, `--pem`, `--regenerate`, and one clear line for a broken CA file; and
/// what the commands that use the CA do with one they cannot use.
@Suite("netsim ca")
final class CACommandTests {
    let home = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-ca-cli-\(UUID().uuidString)")

    deinit { try? FileManager.default.removeItem(at: home) }

    /// netsim with this test's `NETSIM_HOME`, in the repository root.
    func netsim(_ arguments: [String]) async throws -> WatchedProcess.Result {
        try await WatchedProcess(URL(fileURLWithPath: "/usr/bin/env"), ["NETSIM_HOME=\(home.path)", NetsimProcess.executable.path] + arguments,
                                 directory: NetsimProcess.root)
            .result(within: .seconds(60))
    }

    func ca(_ arguments: [String] = []) async throws -> WatchedProcess.Result {
        try await netsim(["ca"] + arguments)
    }

    func fingerprint(_ output: String) -> String? {
        output.split(separator: "\n").first { $0.hasPrefix("SHA-256:") }.map { $0.dropFirst(8).trimmingCharacters(in: .whitespaces) }
    }

    @Test func printsThePathAndTheFingerprintOpenSSLComputes() async throws {
        let first = try await ca()
        #expect(first.status == 0, "\(first.standardError)")
        #expect(first.standardOutput.contains(home.appendingPathComponent("ca.pem").path))
        let openssl = try await WatchedProcess(URL(fileURLWithPath: "/usr/bin/openssl"),
                                               ["x509", "-in", home.appendingPathComponent("ca.pem").path, "-noout", "-fingerprint", "-sha256"])
            .result(within: .seconds(20))
        let expected = openssl.standardOutput.split(separator: "=").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        #expect(fingerprint(first.standardOutput) == expected)
        // Kept: a second run shows the same CA; --pem prints it.
        #expect(fingerprint(try await ca().standardOutput) == expected)
        let pem = try await ca(["--pem"])
        #expect(pem.standardOutput.hasPrefix("-----BEGIN CERTIFICATE-----"))
        #expect(pem.standardOutput == (try String(contentsOf: home.appendingPathComponent("ca.pem"), encoding: .utf8)))
        let regenerated = try await ca(["--regenerate"])
        #expect(fingerprint(regenerated.standardOutput) != expected)
    }

    /// A CA key others can read is refused, as ssh refuses such a private key; `netsim ca` used
    /// to print "(mode 0600)" whatever the mode was.
    @Test func aCAKeyOthersCanReadIsRefusedWithTheFix() async throws {
        #expect(try await ca().status == 0)
        let key = home.appendingPathComponent("ca-key.pem").path
        #expect(chmod(key, 0o644) == 0)
        let loose = try await ca()
        #expect(loose.status == 2)
        #expect(loose.standardError.contains("others can read or write it (mode 0644); the CA key must be mode 0600: chmod 600 \(key)"), "\(loose.standardError)")
        #expect(chmod(key, 0o600) == 0)
        #expect(try await ca().status == 0)
    }

    /// QA 62: `netsim run` exited 2 — "the scenario is missing or does not validate"
    /// (docs/running.md) — for a CA it could not use; the harness could not run: 1. `netsim test`
    /// counts the run as one netsim could not run, and exits 1 as for any failed run.
    @Test func runAndTestWithAnUnusableCAExitOneTheHarnessCouldNotRun() async throws {
        #expect(try await ca().status == 0)
        let key = home.appendingPathComponent("ca-key.pem").path
        #expect(chmod(key, 0o644) == 0)
        let reason = "cannot set up netsim's CA: \(key): others can read or write it (mode 0644); the CA key must be mode 0600: chmod 600 \(key)"
        let run = try await netsim(["run", "Scenarios/lockscreen-h2.scn"])
        #expect(run.status == 1, "\(run.standardOutput)\(run.standardError)")
        #expect(run.standardError == "netsim: \(reason)\n")
        let test = try await netsim(["test", "Scenarios/lockscreen-h2.scn"])
        #expect(test.status == 1, "\(test.standardOutput)\(test.standardError)")
        #expect(test.standardOutput.contains("FAIL Scenarios/lockscreen-h2.scn: netsim could not run it: \(reason)\n"), "\(test.standardOutput)")
    }

    /// QA 62: the key line said "(mode 0600)" whatever the key's mode; 0400 is as private.
    @Test func theKeyLineShowsTheKeysOwnMode() async throws {
        #expect(try await ca().standardOutput.contains("ca-key.pem (mode 0600)\n"))
        #expect(chmod(home.appendingPathComponent("ca-key.pem").path, 0o400) == 0)
        let shown = try await ca()
        #expect(shown.status == 0, "\(shown.standardError)")
        #expect(shown.standardOutput.contains("key:         \(home.appendingPathComponent("ca-key.pem").path) (mode 0400)\n"), "\(shown.standardOutput)")
    }

    /// QA 62: a home others can write in (`mkdir -m 777`) got the CA key without a word.
    @Test func aHomeOthersCanWriteInIsRefusedWithTheFix() async throws {
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        #expect(chmod(home.path, 0o777) == 0)
        let refused = try await ca()
        #expect(refused.status == 2)
        #expect(refused.standardError == "netsim ca: \(home.path): its group or others can write in it (mode 0777), and could put a CA of their own in netsim's place; as ssh does for ~/.ssh, netsim keeps its CA only where no one else can write: chmod 700 \(home.path)\n")
        #expect(!FileManager.default.fileExists(atPath: home.appendingPathComponent("ca-key.pem").path))
    }

    /// QA 62: a CA that had expired the day before was shown, "valid until: <yesterday>", with
    /// exit 0. It is refused as any CA netsim cannot use is; one in its last week is shown with a
    /// note.
    @Test func anExpiredCAIsRefusedAndOneEndingSoonNoted() async throws {
        let day: TimeInterval = 86400
        let expired = try CertificateAuthority.load(from: NetsimHome(directory: home), now: Date() - 3651 * day)
        let refused = try await ca()
        #expect(refused.status == 2)
        #expect(refused.standardError == "netsim ca: \(TLSSetupError.authorityExpired(home.path, on: expired.certificate.notValidAfter))\n")
        #expect(refused.standardError.contains("expired on "), "\(refused.standardError)")
        let ending = try CertificateAuthority.load(from: NetsimHome(directory: home), regenerate: true, now: Date() - 3646.5 * day)
        let shown = try await ca()
        #expect(shown.status == 0, "\(shown.standardError)")
        #expect(shown.standardError == "netsim ca: note: \(ending.expiryNote() ?? "none")\n")
        #expect(shown.standardError.contains(", in 3 days: "), "\(shown.standardError)")
    }

    @Test func aCAFileThatIsNotPEMIsOneLineAndExitTwo() async throws {
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try "garbage\n".write(to: home.appendingPathComponent("ca.pem"), atomically: true, encoding: .utf8)
        try "garbage\n".write(to: home.appendingPathComponent("ca-key.pem"), atomically: true, encoding: .utf8)
        let result = try await ca()
        #expect(result.status == 2)
        #expect(result.standardError == "netsim ca: \(home.appendingPathComponent("ca.pem").path) is not PEM: expected a PEM certificate (a file starting with '-----BEGIN')\n")
    }

    /// `netsim relay --fault bad-cert=expired` serves a certificate netsim's CA issued, so a client
    /// trusting that CA refuses it for its date alone. It came from a throwaway CA, and every
    /// client refused it as untrusted: one that never checks dates passed.
    @Test func badCertExpiredIsIssuedByNetsimsCA() async throws {
        #expect(try await ca().status == 0)
        let relay = try WatchedProcess(URL(fileURLWithPath: "/usr/bin/env"), [
            "NETSIM_HOME=\(home.path)", NetsimProcess.executable.path, "relay", "--upstream", "127.0.0.1:9",
            "--fault", "bad-cert=expired", "--duration", "20s"])
        let line = try await relay.line(.error, within: .seconds(20)) { $0.hasPrefix("netsim relay: 127.0.0.1:") }
        let port = try #require(line.split(separator: " ").dropFirst(2).first.flatMap { $0.split(separator: ":").last }, "\(line)")
        let check = try await WatchedProcess(URL(fileURLWithPath: "/bin/sh"), [
            "-c", "openssl s_client -connect 127.0.0.1:\(port) -servername localhost -CAfile '\(home.appendingPathComponent("ca.pem").path)' < /dev/null 2>&1",
        ]).result(within: .seconds(20))
        kill(relay.processIdentifier, SIGINT)
        _ = try await relay.result(within: .seconds(20))
        #expect(check.standardOutput.contains("certificate has expired"), "\(check.standardOutput)")
        #expect(!check.standardOutput.contains("self-signed certificate in certificate chain"), "\(check.standardOutput)")
    }
}
