import Foundation
import NetsimCore
import NetsimHTTP
import NetsimLoopback
import NetsimRelay
import NetsimTLS
import Testing

/// A client that reaches an intercepting relay by an address other than loopback sends no SNI
/// and verifies the leaf for that address: the leaf names it (QA 62: it named localhost,
/// 127.0.0.1 and ::1 only, and a device reaching the host at 10.0.2.2 could not verify it).
/// 127.0.0.2 stands for such an address: loopback to the kernel, not among the loopback names.
@Suite("TLS interception: the leaf names the address reached")
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
}
