import NetsimFaults
import NetsimRelay
import Testing

/// A captive portal behind netsim's TLS termination (`--tls intercept`): it answers inside the
/// session, and judges requests as it does plain HTTP.
@Suite("a portal under interception")
struct InterceptedPortalTests {
    /// A portal judges an h2 request by its `:authority`, as it judges HTTP/1.1 by `Host`: it
    /// answered "to no Host" and sent the client on to `continue=http://unknown/…` (QA 48). The
    /// page to continue to is the HTTPS one asked for, in either version (it said http://).
    @Test(arguments: ["--http2", "--http1.1"])
    func aPortalSendsTheClientOnToTheHTTPSPageItAskedFor(version: String) async throws {
        let setup = try InterceptionTests.Setup()
        let (relay, endpoint) = try await setup.relay(faults: [FaultRule(.portal(PortalSettings(answer: .redirect)))])
        let result = try await setup.curl(["https://localhost:\(endpoint.port)/q?x=1"], extra: [version, "-w", "%{redirect_url}\\n"])
        await relay.stop()
        await setup.server.stop()
        #expect(result.standardOutput.contains("continue=https%3A%2F%2Flocalhost%3A\(endpoint.port)%2Fq%3Fx%3D1"), "\(result.standardOutput) \(result.standardError)")
        #expect(relay.eventLog.events.contains { if case .faultFired("portal", let detail) = $0.kind { detail.contains("GET /q?x=1 to localhost") } else { false } },
                "\(relay.eventLog.events.map(\.kind))")
    }
}
