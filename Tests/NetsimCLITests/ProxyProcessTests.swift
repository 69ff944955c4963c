import Foundation
import NetsimCore
import NetsimLoopback
import Testing

/// `netsim proxy` as a person runs it: Ctrl-C with clients still talking to the proxy itself.
@Suite("netsim proxy, the process")
struct ProxyProcessTests {
    /// An idle client (a browser's preconnect), one halfway through its head and a CONNECT still
    /// waiting for its answer: Ctrl-C stops the proxy cleanly. Their connections were left to
    /// the event loops' shutdown, and SwiftNIO printed "Cannot schedule tasks on an EventLoop
    /// that has already shut down" at every such stop.
    @Test func ctrlCWithClientsNotYetRelayedStopsCleanly() async throws {
        let proxy = try WatchedProcess(NetsimProcess.executable, ["proxy", "--listen", "127.0.0.1:0", "--latency", "1s"])
        let line = try await proxy.line(.error, within: .seconds(10)) { $0.hasPrefix("netsim proxy: http://") }
        let port = try #require(Int(line.split(separator: ":").last ?? ""), "\(line)")
        let endpoint = Endpoint(host: "127.0.0.1", port: port)
        let clients = try await offload { () -> [BlockingSocket] in
            try (0..<5).flatMap { _ in
                let idle = try BlockingSocket.connect(to: endpoint)
                let half = try BlockingSocket.connect(to: endpoint)
                try half.send("GET http://127.0.0.1:9/ HTTP/1.1\r\n")
                let tunnel = try BlockingSocket.connect(to: endpoint)
                try tunnel.send("CONNECT 127.0.0.1:\(port) HTTP/1.1\r\n\r\n")  // answered after 4 s: two round trips
                return [idle, half, tunnel]
            }
        }
        defer { clients.forEach { $0.close() } }
        // The CONNECT's destination (the proxy itself) connects at once; its 200 waits out the
        // link. A pause, not a wait on something: nothing outside shows the heads were read, and
        // a stop before they were would only test less, never fail.
        try await Task.sleep(for: .milliseconds(300))
        kill(proxy.processIdentifier, SIGINT)
        let result = try await proxy.result(within: .seconds(20))
        #expect(result.status == 0, "\(result.standardError)")
        #expect(!result.standardError.contains("Cannot schedule"), "\(result.standardError)")
        #expect(result.standardError.hasSuffix("netsim proxy: stopped\n"), "\(result.standardError)")
        // The banner names the seed, as the relay's does (QA 44: it had none).
        #expect(result.standardError.contains("  seed: 1; Ctrl-C to stop\n"), "\(result.standardError)")
    }
}
