import Foundation
import NetsimCore
import NetsimFaults
import NetsimHTTP
import NetsimLoopback
import NetsimRelay
import NetsimTLS
import Testing

/// A client that reaches netsim's TLS by an address other than loopback sends no SNI and verifies
/// the certificate for that address: it names it (QA 62: it named localhost, 127.0.0.1 and ::1
/// only, and a device reaching the host at 10.0.2.2 could not verify it) — an intercepting
/// relay's leaf, the built-in TLS server's, and a `bad-cert` certificate, which must be wrong in
/// its fault's way only. 127.0.0.2 stands for such an address: loopback to the kernel, not among
/// the loopback names.
@Suite("TLS: the certificate names the address reached")
struct InterceptedAddressLeafTests {
    @Test func aClientWithoutSNIVerifiesTheRelaysOwnAddress() async throws {
        let setup = try InterceptionTests.Setup()
        let upstream = try await setup.server.start()
        let interception = try TLSInterception(authority: setup.authority, upstreamTrust: .authority(setup.authority))
        let relay = Relay(configuration: RelayConfiguration(listen: Endpoint(host: "127.0.0.2", port: 0), upstream: upstream,
                                                            observeHTTP: true, tls: interception))
        let endpoint = try await relay.start()
        // curl sends no SNI to an address, and checks the certificate's IP addresses against it.
        let reached = try await setup.curl(["https://127.0.0.2:\(endpoint.port)/hello"], extra: ["--http1.1"])
        // By name, the same relay presents the leaf for that name, as before.
        let named = try await setup.curl(["https://localhost:\(endpoint.port)/hello"], extra: ["--http1.1", "--resolve", "localhost:\(endpoint.port):127.0.0.2"])
        await relay.stop()
        await setup.server.stop()
        #expect(reached.status == 0, "\(reached.standardError)")
        #expect(reached.standardOutput.hasPrefix("200 1.1"), "\(reached.standardOutput)")
        #expect(named.standardOutput.hasPrefix("200 1.1"), "\(named.standardOutput) \(named.standardError)")
    }

    /// The built-in TLS server listening off loopback (as on a packet link's host side).
    @Test func aClientWithoutSNIVerifiesTheBuiltinServersAddress() async throws {
        let setup = try InterceptionTests.Setup()
        let upstream = try await setup.server.start(host: "127.0.0.2")
        let reached = try await setup.curl(["https://127.0.0.2:\(upstream.port)/hello"], extra: ["--http1.1"])
        await setup.server.stop()
        #expect(reached.status == 0, "\(reached.standardError)")
        #expect(reached.standardOutput.hasPrefix("200 1.1"), "\(reached.standardOutput)")
    }

    /// An expired certificate is refused for its date, not also for a host it does not name.
    @Test func badCertIsWrongInItsFaultsWayOnly() async throws {
        let setup = try InterceptionTests.Setup()
        let upstream = try await setup.server.start()
        let relay = Relay(configuration: RelayConfiguration(listen: Endpoint(host: "127.0.0.2", port: 0), upstream: upstream,
                                                            faults: [FaultRule(.badCert(.expired))], authority: setup.authority))
        let endpoint = try await relay.start()
        let expired = try await setup.curl(["https://127.0.0.2:\(endpoint.port)/hello"])
        // --insecure skips the date and the name alike; what was presented is then the question.
        let shown = try await WatchedProcess(URL(fileURLWithPath: "/usr/bin/env"), [
            "sh", "-c", "openssl s_client -connect 127.0.0.2:\(endpoint.port) </dev/null 2>/dev/null | openssl x509 -noout -ext subjectAltName",
        ]).result(within: .seconds(30))
        await relay.stop()
        await setup.server.stop()
        #expect(expired.status == 60, "\(expired.standardError)")
        #expect(expired.standardError.contains("expired"), "\(expired.standardError)")
        #expect(shown.standardOutput.contains("IP Address:127.0.0.2"), "\(shown.standardOutput) \(shown.standardError)")
    }
}
