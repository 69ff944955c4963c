import Foundation
import NetsimCore
import NetsimFaults
import NetsimRelay
import NetsimTLS
import Testing

/// A TLS answer of netsim's own behind interception's suite set-up: `bad-cert`, and a portal
/// with `tls=self-signed`.
extension InterceptionTests {
    /// bad-cert answers the handshake itself: a client trusting netsim's CA refuses every kind
    /// (for the reason named), and one that accepts anything (`curl -k`) is a security finding.
    @Test(arguments: BadCertificateKind.allCases)
    func badCertIsRefusedByACorrectClientAndAcceptingItIsAFinding(kind: BadCertificateKind) async throws {
        let setup = try Setup()
        let upstream = try await setup.server.start()
        let relay = Relay(configuration: RelayConfiguration(upstream: upstream, faults: [FaultRule(.badCert(kind))], authority: setup.authority))
        let endpoint = try await relay.start()
        let url = "https://localhost:\(endpoint.port)/hello"
        let correct = try await setup.curl([url])
        let careless = try await setup.curl([url], extra: ["--insecure"])
        // A client that speaks plain HTTP to it is not graded: it refused nothing.
        _ = try await setup.curl(["http://localhost:\(endpoint.port)/hello"])
        await relay.stop()
        await setup.server.stop()
        #expect(correct.status == 60, "\(kind): \(correct.standardError)")   // CURLE_PEER_FAILED_VERIFICATION
        #expect(careless.standardOutput.hasPrefix("421"), "\(careless.standardOutput) \(careless.standardError)")
        #expect(setup.server.requests.isEmpty)
        let details = relay.eventLog.events.compactMap { event -> String? in
            if case .faultFired(_, let detail) = event.kind { return detail }
            return nil
        }
        #expect(details.filter { $0.hasPrefix("the client refused \(kind.certificate)") }.count == 1, "\(details)")
        #expect(details.contains { $0.hasPrefix("SECURITY: the client accepted \(kind.certificate)") }, "\(details)")
        #expect(details.contains { $0.hasPrefix("the client did not speak TLS") && $0.contains("nothing was judged") }, "\(details)")
    }

    /// The secrets of a session bad-cert answers go to the key log with interception's, so a
    /// capture shows what a careless client sent over the wrong certificate (QA 48: the `.keys`
    /// file had none of them).
    @Test func badCertSessionsAreInTheKeyLog() async throws {
        let setup = try Setup()
        let upstream = try await setup.server.start()
        let keys = setup.folder.appendingPathComponent("run.keys")
        let keyLog = try KeyLogFile(url: keys)
        let interception = try TLSInterception(authority: setup.authority, upstreamTrust: .authority(setup.authority), keyLog: keyLog)
        let relay = Relay(configuration: RelayConfiguration(upstream: upstream, faults: [FaultRule(.badCert(.expired))], observeHTTP: true,
                                                            tls: interception, authority: setup.authority))
        let endpoint = try await relay.start()
        let careless = try await setup.curl(["https://localhost:\(endpoint.port)/hello"], extra: ["--insecure", "--http1.1"])
        await relay.stop()
        await setup.server.stop()
        keyLog.close()
        #expect(careless.standardOutput.hasPrefix("421"), "\(careless.standardOutput) \(careless.standardError)")
        let lines = try String(contentsOf: keys, encoding: .utf8).split(separator: "\n")
        #expect(lines.contains { $0.hasPrefix("CLIENT_TRAFFIC_SECRET_0 ") || $0.hasPrefix("CLIENT_RANDOM ") }, "\(lines)")
    }

    /// A portal with `tls=self-signed` answers HTTPS as bad-cert does, with interception or
    /// without: a correct client refuses, `curl -k` is a finding; plain HTTP gets the login
    /// page; after the login HTTPS reaches the server.
    @Test(arguments: [false, true])
    func aPortalAnswersHTTPSWithASelfSignedCertificateUntilTheLogin(intercepting: Bool) async throws {
        let setup = try Setup()
        let portal = FaultRule(.portal(PortalSettings(answer: .page, tls: .selfSigned)))
        let relay: Relay
        let endpoint: Endpoint
        if intercepting {
            (relay, endpoint) = try await setup.relay(faults: [portal])
        } else {
            relay = Relay(configuration: RelayConfiguration(upstream: try await setup.server.start(), faults: [portal], observeHTTP: true, authority: setup.authority))
            endpoint = try await relay.start()
        }
        let url = "https://localhost:\(endpoint.port)/hello"
        let correct = try await setup.curl([url])
        let careless = try await setup.curl([url], extra: ["--insecure"])
        let plain = try await setup.curl(["http://localhost:\(endpoint.port)/hello"])
        _ = await relay.login()
        let after = try await setup.curl([url])
        await relay.stop()
        await setup.server.stop()
        #expect(correct.status == 60, "\(correct.standardError)")   // CURLE_PEER_FAILED_VERIFICATION
        #expect(careless.standardOutput.hasPrefix("421"), "\(careless.standardOutput) \(careless.standardError)")
        #expect(plain.standardOutput.hasPrefix("200"), "the login page: \(plain.standardOutput) \(plain.standardError)")
        #expect(after.standardOutput.hasPrefix("200"), "\(after.standardOutput) \(after.standardError)")
        #expect(setup.server.requests.count == 1, "only the request after the login reaches the server")
        let details = relay.eventLog.events.compactMap { event -> String? in
            if case .faultFired("portal", let detail) = event.kind { return detail }
            return nil
        }
        #expect(details.contains { $0.hasPrefix("the client refused a self-signed certificate") }, "\(details)")
        #expect(details.contains { $0.hasPrefix("SECURITY: the client accepted a self-signed certificate") }, "\(details)")
    }
}
