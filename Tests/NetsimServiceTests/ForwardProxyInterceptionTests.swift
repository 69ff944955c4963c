import Foundation
import NetsimCore
import NetsimHTTP
import NetsimLoopback
import NetsimRelay
import NetsimService
import NetsimTLS
import Testing

/// `netsim proxy --tls intercept`: CONNECT tunnels terminated with netsim's CA (how mitmproxy and
/// Charles serve a device that installed their CA), HTTP observed inside; without it a tunnel
/// stays opaque.
@Suite("Forward proxy: TLS interception")
final class ForwardProxyInterceptionTests {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-proxy-tls-\(UUID().uuidString)")

    deinit { try? FileManager.default.removeItem(at: folder) }

    @Test(arguments: [true, false])
    func aConnectTunnelIsInterceptedOnlyWhenAsked(intercept: Bool) async throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let authority = try CertificateAuthority.ephemeral()
        let caFile = folder.appendingPathComponent("ca.pem").path
        try (try authority.pem).write(toFile: caFile, atomically: true, encoding: .utf8)
        let server = BuiltinServer(routes: [HTTPRoute(path: "/hello", body: .text("hi"))],
                                   transport: try .tls(authority: authority, protocols: [.http1]))
        let upstream = try await server.start()
        let interception = try TLSInterception(authority: authority, upstreamTrust: .authority(authority), protocols: [.http1])
        let proxy = ForwardProxy(configuration: .init(interception: intercept ? { @Sendable _ in interception } : nil), threads: 1)
        let endpoint = try await proxy.start()
        let curl = try await WatchedProcess(URL(fileURLWithPath: "/usr/bin/env"), [
            "curl", "-sS", "--max-time", "10", "-x", "http://\(endpoint)", "--cacert", caFile, "-o", "/dev/null", "-w", "%{http_code}",
            "https://localhost:\(upstream.port)/hello",
        ]).result(within: .seconds(20))
        await proxy.stop()
        await server.stop()
        #expect(curl.standardOutput == "200", "\(curl.standardError)")
        let observed = proxy.eventLog.events.contains { if case .httpRequest(_, "/hello", _, _, _, _, _) = $0.kind { true } else { false } }
        #expect(observed == intercept)
    }
}
