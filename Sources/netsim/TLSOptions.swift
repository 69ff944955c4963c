import ArgumentParser
import Foundation
import NetsimRelay
import NetsimTLS

/// `--tls passthrough|intercept` and how an intercepting relay trusts its upstream.
struct TLSOptions: ParsableArguments {
    enum Mode: String, ExpressibleByArgument, CaseIterable {
        case passthrough, intercept
    }

    @Option(help: ArgumentHelp(
        "passthrough: TLS crosses the relay untouched (default). intercept: the relay terminates TLS with netsim's CA (`netsim ca`; clients must trust it), sees the HTTP inside, and speaks its own verified TLS to upstream. Example: --tls intercept",
        valueName: "passthrough|intercept"))
    var tls: Mode = .passthrough

    @Option(name: .customLong("upstream-ca"), help: ArgumentHelp("With --tls intercept: verify upstream's certificate against this CA (PEM) instead of the system's trust store. Example: --upstream-ca server-ca.pem", valueName: "file"))
    var upstreamCA: String?

    @Flag(name: .customLong("upstream-insecure"), help: "With --tls intercept: do not verify upstream's certificate at all (said loudly at start; never for anything but a test server).")
    var upstreamInsecure = false

    @Option(name: .customLong("upstream-name"), help: ArgumentHelp("With --tls intercept: the name upstream's certificate must carry, sent as SNI. Default: upstream's host (an IP address is verified as one). Example: --upstream-name api.example.test", valueName: "name"))
    var upstreamName: String?

    func validate() throws {
        if upstreamCA != nil, upstreamInsecure {
            throw ValidationError("--upstream-ca and --upstream-insecure exclude each other: verify against a CA, or not at all")
        }
        if tls == .passthrough, upstreamCA != nil || upstreamInsecure || upstreamName != nil {
            throw ValidationError("--upstream-ca, --upstream-insecure and --upstream-name go with --tls intercept (in passthrough the client verifies upstream itself)")
        }
    }

    /// The interception asked for, with netsim's CA from `$NETSIM_HOME` (made on first use); nil
    /// in passthrough. `keyLog` receives both sessions' secrets.
    func interception(keyLog: KeyLogFile?) throws -> (TLSInterception, CertificateAuthority)? {
        guard tls == .intercept else { return nil }
        let trust: TLSInterception.UpstreamTrust = upstreamInsecure ? .insecure : upstreamCA.map { .caFile($0) } ?? .system
        do {
            let authority = try CertificateAuthority.load(from: .fromEnvironment())
            let interception = try TLSInterception(authority: authority, upstreamTrust: trust, upstreamServerName: upstreamName, keyLog: keyLog)
            return (interception, authority)
        } catch let error as TLSSetupError {
            throw ValidationError(error.description)
        }
    }
}
