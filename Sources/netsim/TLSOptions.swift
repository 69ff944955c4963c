import ArgumentParser
import Foundation
import NIOSSL
import NetsimCore
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

    @Option(help: ArgumentHelp("With --tls intercept: the protocols offered to clients by ALPN, in order. Offer h2 only when upstream speaks it (an h2 client is carried on an h2 connection to upstream). Default: http/1.1. Example: --alpn h2,http/1.1", valueName: "list"),
            transform: TLSOptions.parseProtocols)
    var alpn: [ApplicationProtocol]?

    static func parseProtocols(_ text: String) throws -> [ApplicationProtocol] {
        let names = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        let protocols = try names.map { name -> ApplicationProtocol in
            guard let value = ApplicationProtocol(rawValue: name) else {
                throw ValidationError("'\(name)' is not a protocol netsim speaks; use h2, http/1.1 or both (h2,http/1.1)")
            }
            return value
        }
        guard !protocols.isEmpty, Set(protocols).count == protocols.count else {
            throw ValidationError("--alpn takes h2, http/1.1 or both, each once (e.g. h2,http/1.1)")
        }
        return protocols
    }

    func validate() throws {
        if upstreamCA != nil, upstreamInsecure {
            throw ValidationError("--upstream-ca and --upstream-insecure exclude each other: verify against a CA, or not at all")
        }
        if tls == .passthrough, upstreamCA != nil || upstreamInsecure {
            throw ValidationError("--upstream-ca and --upstream-insecure go with --tls intercept (in passthrough the client verifies upstream itself)")
        }
        if tls == .passthrough, alpn != nil {
            throw ValidationError("--alpn goes with --tls intercept (in passthrough the client and upstream negotiate it themselves)")
        }
        // Checked here, where a usage error names the subcommand: thrown from run(), it was
        // printed with the root command's usage.
        if let upstreamCA {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: upstreamCA, isDirectory: &isFolder), !isFolder.boolValue,
                  FileManager.default.isReadableFile(atPath: upstreamCA) else {
                throw ValidationError("--upstream-ca \(upstreamCA): there is no such readable file; give the CA's certificate (PEM)")
            }
            // Here too, so a key or a DER file is a usage error like the others (it exited 1: QA 41).
            guard let certificates = try? NIOSSLCertificate.fromPEMFile(upstreamCA), !certificates.isEmpty else {
                throw ValidationError("--upstream-ca \(upstreamCA) is not one or more PEM certificates (-----BEGIN CERTIFICATE-----); give the CA's certificate")
            }
        }
    }

    /// The start-up note for a fault that acts only on intercepted HTTP/2 (`goaway`,
    /// `rst-stream`, `max-streams`) where nothing here can carry HTTP/2: no interception, or an
    /// interception whose ALPN does not offer h2 (its default). nil when the fault can act. A
    /// note, not an error: one fault list may serve relays with and without interception.
    /// `command`: `relay` or `proxy`, as the note names it.
    func http2Note(for rule: FaultRule, command: String) -> String? {
        guard rule.kind.actsOnInterceptedHTTP2Only else { return nil }
        let name = rule.kind.faultName
        if tls != .intercept {
            return "\(name) acts on HTTP/2 the \(command) intercepts; without --tls intercept it does nothing"
        }
        guard !(alpn ?? [.http1]).contains(.http2) else { return nil }
        return "\(name) acts on HTTP/2 the \(command) intercepts; --alpn does not offer h2 (default http/1.1), so no client speaks it here: add --alpn h2,http/1.1"
    }

    /// netsim's CA for `bad-cert`'s `expired` and `wrong-host` certificates: issued by it, a
    /// client that trusts it (`netsim ca`) refuses them for the expiry or the name alone
    /// (tls.md). The interception's when intercepting, else loaded when a `bad-cert` fault is
    /// among `rules`; nil otherwise. Without it the relay issued them from a CA of its own, and
    /// a client that never checks expiry or names still refused them, for the unknown issuer —
    /// and was told it had passed.
    func badCertAuthority(_ rules: [FaultRule], intercepting: CertificateAuthority?) throws -> CertificateAuthority? {
        if let intercepting { return intercepting }
        guard rules.contains(where: { $0.kind.as(BadCert.self) != nil }) else { return nil }
        do {
            return try CertificateAuthority.load(from: .fromEnvironment())
        } catch let error as TLSSetupError {
            throw RuntimeError(error.description)
        }
    }

    /// The interception asked for, with netsim's CA from `$NETSIM_HOME` (made on first use); nil
    /// in passthrough. `keyLog` receives both sessions' secrets; `upstreamName` is the name
    /// upstream's certificate must carry (``UpstreamNameOption``), nil for upstream's host.
    func interception(keyLog: KeyLogFile?, upstreamName: String? = nil) throws -> (TLSInterception, CertificateAuthority)? {
        guard tls == .intercept else { return nil }
        let trust: TLSInterception.UpstreamTrust = upstreamInsecure ? .insecure : upstreamCA.map { .caFile($0) } ?? .system
        do {
            let authority = try CertificateAuthority.load(from: .fromEnvironment())
            let interception = try TLSInterception(authority: authority, upstreamTrust: trust, upstreamServerName: upstreamName,
                                                   protocols: alpn ?? [.http1], keyLog: keyLog)
            return (interception, authority)
        } catch let error as TLSSetupError {
            throw RuntimeError(error.description)  // not a usage error: ArgumentParser would print the root's usage
        }
    }
}

/// `--upstream-name`: the name an intercepting `netsim relay` verifies upstream's certificate
/// against. Its own group, apart from ``TLSOptions``, so that `netsim proxy`, which verifies each
/// destination by the name its client asked for, does not list it in its help (it did, marked
/// "netsim relay only"); the proxy parses it hidden, to refuse it with that reason.
struct UpstreamNameOption: ParsableArguments {
    @Option(name: .customLong("upstream-name"), help: ArgumentHelp("With --tls intercept: the name upstream's certificate must carry, sent as SNI. Default: upstream's host (an IP address is verified as one). Example: --upstream-name api.example.test", valueName: "name"))
    var upstreamName: String?

    func validate() throws {
        guard let upstreamName else { return }
        // An address is verified as one when it is the upstream's host; named here it went out as
        // SNI, which cannot carry an address, and every connection failed (QA 48).
        let address = Endpoint.canonicalIPv4(upstreamName) ?? upstreamName
        if DNSMapping.addressBytes(address) != nil {
            let upstream = address.contains(":") ? "[\(address)]:PORT" : "\(address):PORT"
            throw ValidationError("--upstream-name \(upstreamName): an address cannot be a certificate's name here (SNI carries names); give a DNS name, or leave it out and --upstream \(upstream) is verified as an address")
        }
        // QA 50: "" and "local host" started the relay, and every connection then failed. The
        // name rule is the one `--upstream HOST:PORT` checks (Endpoint.hostProblem).
        if let problem = Endpoint.hostProblem(upstreamName, bracketed: false) {
            throw ValidationError("--upstream-name \(problem); give the name upstream's certificate carries (e.g. api.example.com)")
        }
    }

    /// Refused without `--tls intercept` (in passthrough the client verifies upstream itself).
    func check(with tls: TLSOptions) throws {
        if tls.tls == .passthrough, upstreamName != nil {
            throw ValidationError("--upstream-name goes with --tls intercept (in passthrough the client verifies upstream itself)")
        }
    }
}
