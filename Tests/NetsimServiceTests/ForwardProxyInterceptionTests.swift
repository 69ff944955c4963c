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

    /// Over HTTP/1.1 and h2 (an intercepted h2 connection reaches upstream on an h2 connection of
    /// the relay's own, with no leg handler on it to turn the proxy's connected channel's reads
    /// on: a review caught every h2 answer lost that way).
    @Test(arguments: [(true, ApplicationProtocol.http1), (true, .http2), (false, .http1)])
    func aConnectTunnelIsInterceptedOnlyWhenAsked(intercept: Bool, version: ApplicationProtocol) async throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let authority = try CertificateAuthority.ephemeral()
        let caFile = folder.appendingPathComponent("ca-\(version.rawValue.replacingOccurrences(of: "/", with: ""))-\(intercept).pem").path
        try (try authority.pem).write(toFile: caFile, atomically: true, encoding: .utf8)
        let server = BuiltinServer(routes: [HTTPRoute(path: "/hello", body: .text("hi"))],
                                   transport: try .tls(authority: authority, protocols: [version]))
        let upstream = try await server.start()
        let interception = try TLSInterception(authority: authority, upstreamTrust: .authority(authority), protocols: [version])
        let proxy = ForwardProxy(configuration: .init(interception: intercept ? { @Sendable _ in interception } : nil), threads: 1)
        let endpoint = try await proxy.start()
        let curl = try await WatchedProcess(URL(fileURLWithPath: "/usr/bin/env"), [
            "curl", "-sS", "--max-time", "10", version == .http2 ? "--http2" : "--http1.1", "-x", "http://\(endpoint)", "--cacert", caFile,
            "-o", "/dev/null", "-w", "%{http_code} %{http_version}", "https://localhost:\(upstream.port)/hello",
        ]).result(within: .seconds(20))
        await proxy.stop()
        await server.stop()
        #expect(curl.standardOutput == (version == .http2 ? "200 2" : "200 1.1"), "\(curl.standardError)")
        let observed = proxy.eventLog.events.contains { if case .httpRequest(_, "/hello", _, _, _, _, _) = $0.kind { true } else { false } }
        #expect(observed == intercept)
    }

    /// `CONNECT 10.1.2.3:443` (here 127.0.0.2, which the loopback names do not cover): the client
    /// sends no SNI and verifies the leaf for that address, which the leaf now names (QA 62: it
    /// named localhost, 127.0.0.1 and ::1 only).
    @Test func aConnectToAnAddressIsShownALeafForThatAddress() async throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let authority = try CertificateAuthority.ephemeral()
        let caFile = folder.appendingPathComponent("ca-address.pem").path
        try (try authority.pem).write(toFile: caFile, atomically: true, encoding: .utf8)
        // The destination itself presents a leaf for its address: the proxy verifies it as one.
        let destination = try authority.presentingLeaves(in: try authority.serverConfiguration(), reaching: ServerName("127.0.0.2"))
        let server = BuiltinServer(routes: [HTTPRoute(path: "/hello", body: .text("hi"))],
                                   transport: UpstreamTransport(tls: destination, protocols: [.http1]))
        let upstream = try await server.start(host: "127.0.0.2")
        let interception = try TLSInterception(authority: authority, upstreamTrust: .authority(authority), protocols: [.http1])
        let proxy = ForwardProxy(configuration: .init(interception: { @Sendable _ in interception }), threads: 1)
        let endpoint = try await proxy.start()
        let curl = try await WatchedProcess(URL(fileURLWithPath: "/usr/bin/env"), [
            "curl", "-sS", "--max-time", "10", "--http1.1", "-x", "http://\(endpoint)", "--cacert", caFile,
            "-o", "/dev/null", "-w", "%{http_code}", "https://127.0.0.2:\(upstream.port)/hello",
        ]).result(within: .seconds(20))
        await proxy.stop()
        await server.stop()
        #expect(curl.standardOutput == "200", "\(curl.standardError)")
        #expect(proxy.eventLog.events.contains { if case .httpRequest(_, "/hello", _, _, _, _, _) = $0.kind { true } else { false } })
    }
}
