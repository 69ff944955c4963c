import Foundation
import NetsimCore
import NetsimLoopback
import Testing
@testable import netsim

/// `netsim relay --metrics ADDR`: the same families as `netsim serve`'s /metrics, for a plain relay.
@Suite("netsim relay --metrics")
struct RelayMetricsTests {
    /// `GET /metrics` with `Connection: close`; the body.
    static func scrape(_ address: Endpoint) throws -> String {
        let socket = try BlockingSocket.connect(to: address)
        defer { socket.close() }
        try socket.send("GET /metrics HTTP/1.1\r\nHost: metrics.test\r\nConnection: close\r\n\r\n")
        let response = String(decoding: try socket.receiveToEnd(), as: UTF8.self)
        #expect(response.hasPrefix("HTTP/1.1 200"), "\(response)")
        return response.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
    }

    @Test func servesTheRelaysTraffic() async throws {
        let server = try LoopbackServer.echo()
        defer { server.stop() }
        let relay = try RelayProcessTests.start([
            "relay", "--upstream", server.endpoint.description, "--latency", "10ms",
            "--metrics", "127.0.0.1:0", "--duration", "60s",
        ])
        let port = try await RelayProcessTests.boundPort(relay)
        let line = try await relay.line(.error, within: .seconds(10)) { $0.hasPrefix("  metrics: http://") }
        let address = try Endpoint(parsing: String(line.dropFirst("  metrics: http://".count).dropLast("/metrics".count)))
        #expect(address.isLoopback)
        let text = try await offload { () -> String in
            let socket = try BlockingSocket.connect(to: Endpoint(host: "127.0.0.1", port: port))
            try socket.send("hello")
            _ = try socket.receive(exactly: 5)
            socket.close()
            return try Self.scrape(address)
        }
        relay.terminate()
        #expect(await relay.exit(within: .seconds(10)) == 0)
        // Counted before the echo could answer: the accept, and the up bytes' delivery and delay.
        #expect(text.contains(#"netsim_proxy_connections_total{proxy="relay"} 1"#), "\(text)")
        #expect(text.contains(#"netsim_proxy_bytes_total{proxy="relay",stream="upstream"} 5"#), "\(text)")
        #expect(text.contains("# TYPE netsim_proxy_added_latency_seconds histogram"), "\(text)")
        #expect(text.contains(#"netsim_proxy_added_latency_seconds_bucket{proxy="relay",stream="upstream",le="0.005"} 0"#), "\(text)")
        #expect(text.contains(#"netsim_proxy_added_latency_seconds_bucket{proxy="relay",stream="upstream",le="0.01"} 1"#), "\(text)")
        #expect(text.contains("# TYPE netsim_proxy_connection_duration_seconds histogram"), "\(text)")
    }

    @Test func aNonLoopbackMetricsAddressWarns() {
        #expect(MetricsListener.exposureWarning(Endpoint(host: "127.0.0.1", port: 9464)) == nil)
        #expect(MetricsListener.exposureWarning(Endpoint(host: "::1", port: 9464)) == nil)
        let warning = MetricsListener.exposureWarning(Endpoint(host: "0.0.0.0", port: 9464)) ?? ""
        #expect(warning.contains("NOT a loopback address"), "\(warning)")
    }
}
