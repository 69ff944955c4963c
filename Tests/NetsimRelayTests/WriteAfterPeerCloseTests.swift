import Foundation
import NetsimCore
import NetsimLoopback
import NetsimRelay
import Testing

/// A client that writes into a connection the server has already closed (the keep-alive race):
/// the server's kernel answers with RST. Through the relay the client must see the same — an
/// EOF for the server's FIN, then the reset — not a clean close that hides it.
@Suite("Write after the server closed", .serialized)
struct WriteAfterPeerCloseTests {
    /// Answers one chunk, then closes its socket fully.
    static func oneShotServer() throws -> LoopbackServer {
        try LoopbackServer { socket in
            guard let chunk = try? socket.receive(timeout: .seconds(5)), !chunk.isEmpty else { return }
            try? socket.send(chunk)
            socket.close()
        }
    }

    /// What the client sees after it writes into the closed connection: its read (Linux reports
    /// the FIN first), then a further write (which fails once the reset has arrived).
    static func afterTheServerClosed(_ endpoint: Endpoint, settle: Double) async throws -> [String] {
        try await offload { () -> [String] in
            let socket = try BlockingSocket.connect(to: endpoint)
            defer { socket.close() }
            try socket.send("first")
            _ = try socket.receive(exactly: 5)
            Thread.sleep(forTimeInterval: 0.2)  // the server has closed its socket
            try socket.send("second")
            Thread.sleep(forTimeInterval: settle)  // the server's RST has come back
            func outcome(_ body: () throws -> String) -> String {
                do { return try body() } catch { return "\(error)" }
            }
            return [
                outcome { try socket.receive(timeout: .seconds(3)).isEmpty ? "eof" : "data" },
                outcome { try socket.send("third"); return "written" },
            ]
        }
    }

    @Test func theServersResetReachesTheClientAsADirectConnectionWould() async throws {
        let server = try Self.oneShotServer()
        defer { server.stop() }
        let direct = try await Self.afterTheServerClosed(server.endpoint, settle: 0.2)
        #expect(direct == ["eof", "broken pipe"], "after FIN and RST Linux reads EOF, and a write fails")
        try await withRelay(upstream: server.endpoint) { relay, endpoint in
            let relayed = try await Self.afterTheServerClosed(endpoint, settle: 0.2)
            #expect(relayed == direct)
            #expect(await relay.eventLog.waitFor(timeout: .seconds(3)) {
                if case .closed(by: .upstream, how: .rst, _, _) = $0.kind { true } else { false }
            } != nil, "the event log says the upstream reset it")
        }
    }

    @Test func aHeldFINIsFollowedByTheReset() async throws {
        let server = try Self.oneShotServer()
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint, faults: [FaultRule(.slowClose(.milliseconds(500)))]) { _, endpoint in
            let relayed = try await Self.afterTheServerClosed(endpoint, settle: 0.6)
            #expect(relayed == ["eof", "broken pipe"])
        }
    }
}
