import Foundation
import NetsimCore
import NetsimHTTP
import NetsimRelay
import NetsimScenario
import NetsimTLS

/// A run's TLS material: netsim's CA from `$NETSIM_HOME` (loaded only when the scenario speaks
/// TLS), and the session secrets written beside `--pcap` (`run.pcap` → `run.keys`) so the capture
/// can be decrypted.
struct RunTLS: Sendable {
    let authority: CertificateAuthority
    /// The CA certificate clients are told to trust (`NETSIM_CA`, `SSL_CERT_FILE`, …).
    let caFile: String
    let keyLog: KeyLogFile?

    /// nil when clients speak plaintext (no TLS upstream, no interception).
    static func prepare(for scenario: Scenario, options: RunOptions) throws -> RunTLS? {
        guard scenario.clientsSpeakTLS else { return nil }
        let authority: CertificateAuthority
        // The harness could not run (exit 1), not an invalid scenario: QA 62 found a CA key at
        // mode 0644 reported with exit 2, which docs/running.md keeps for a scenario that is
        // missing or does not validate — a CI job was told its scenario was wrong.
        do { authority = try CertificateAuthority.load(from: options.netsimHome) } catch {
            throw RunnerError.failed("cannot set up netsim's CA: \(error)")
        }
        guard let caFile = authority.certificatePath?.path else { throw RunnerError.failed("netsim's CA has no file") }
        var keyLog: KeyLogFile?
        if let pcap = options.pcapPath {
            do { keyLog = try KeyLogFile(url: KeyLogFile.url(besidePcap: pcap)) } catch {
                throw RunnerError.invalid("cannot write the TLS key log: \(error)")
            }
        }
        return RunTLS(authority: authority, caFile: caFile, keyLog: keyLog)
    }

    /// The relay's interception when the scenario asks for it: the built-in upstream is verified
    /// against the run's CA, a real server against the system's trust store.
    func interception(for scenario: Scenario) throws -> TLSInterception? {
        guard scenario.interceptTLS else { return nil }
        var trust = TLSInterception.UpstreamTrust.system
        if case .builtin = scenario.upstream { trust = .authority(authority) }
        do {
            return try TLSInterception(authority: authority, upstreamTrust: trust, protocols: scenario.upstream.protocolsOfferedWhenIntercepted,
                                       keyLog: keyLog)
        } catch {
            throw RunnerError.invalid("cannot set up TLS interception: \(error)")
        }
    }

    func transport(_ wire: UpstreamWire) throws -> UpstreamTransport {
        guard wire.tls else { return UpstreamTransport(protocols: wire.protocols) }
        return try .tls(authority: authority, protocols: wire.protocols, keyLog: keyLog)
    }

    /// What an exec client finds in its environment: the CA under every name the common
    /// libraries read (OpenSSL and Python's ssl: `SSL_CERT_FILE`; requests: `REQUESTS_CA_BUNDLE`;
    /// curl: `CURL_CA_BUNDLE`; Node: `NODE_EXTRA_CA_CERTS`), and `NETSIM_CA` for the rest.
    static func clientEnvironment(caFile: String) -> [String: String] {
        ["NETSIM_CA": caFile, "SSL_CERT_FILE": caFile, "REQUESTS_CA_BUNDLE": caFile, "CURL_CA_BUNDLE": caFile, "NODE_EXTRA_CA_CERTS": caFile]
    }
}
