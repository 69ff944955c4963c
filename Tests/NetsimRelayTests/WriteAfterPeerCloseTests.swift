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
    /// Answers one chunk, then closes its socket fully and signals `closed`, once its FIN has
    /// been acknowledged (a close with SO_LINGER waits for that), so the relay's kernel has it. Closing at once, the FIN could
    /// still wait in a busy CPU's backlog while the client's next bytes reached the server and its
    /// RST came back first: the relay, having seen no FIN, rightly passed on a reset alone (CI,
    /// once: `connection reset by peer` where `eof` was expected).
    static func oneShotServer(closed: DispatchSemaphore) throws -> LoopbackServer {
        try LoopbackServer { socket in
            guard let chunk = try? socket.receive(timeout: .seconds(5)), !chunk.isEmpty else { return }
            try? socket.send(chunk)
            var linger = linger(l_onoff: 1, l_linger: 10)  // close(2) returns once the FIN is acknowledged (10 s at most)
            setsockopt(socket.fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
            socket.close()
            closed.signal()
        }
    }

    /// Waits until poll(2) reports one of `events` on `socket` or `within` has passed.
    static func waitFor(_ events: Int32, on socket: BlockingSocket, within: Duration) {
        var poller = pollfd(fd: socket.fd, events: Int16(events), revents: 0)
        _ = poll(&poller, 1, Int32(within.components.seconds * 1000))
    }

    /// What the client sees after it writes into the closed connection: its read (Linux reports
    /// the FIN first), then a further write (which fails once the reset has arrived).
    /// It writes once the server has closed (`serverClosed`) and, unless the relay holds that FIN
    /// (`finHeld`), once the FIN has arrived (POLLRDHUP). Then it waits for the reset (POLLERR,
    /// POLLHUP). Each wait is bounded at 10 s against hanging: a reset that never comes makes the
    /// third write succeed and the test fail.
    static func afterTheServerClosed(_ endpoint: Endpoint, serverClosed: DispatchSemaphore, finHeld: Bool = false) async throws -> [String] {
        try await offload { () -> [String] in
            let socket = try BlockingSocket.connect(to: endpoint)
            defer { socket.close() }
            try socket.send("first")
            _ = try socket.receive(exactly: 5)
            _ = serverClosed.wait(timeout: .now() + 10)
            if !finHeld { waitFor(0x2000 /* POLLRDHUP: the peer's FIN */, on: socket, within: .seconds(10)) }
            try socket.send("second")
            waitFor(Int32(POLLERR | POLLHUP), on: socket, within: .seconds(10))  // the server's RST has come back
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
        let closed = DispatchSemaphore(value: 0)
        let server = try Self.oneShotServer(closed: closed)
        defer { server.stop() }
        let direct = try await Self.afterTheServerClosed(server.endpoint, serverClosed: closed)
        #expect(direct == ["eof", "broken pipe"], "after FIN and RST Linux reads EOF, and a write fails")
        try await withRelay(upstream: server.endpoint) { relay, endpoint in
            let relayed = try await Self.afterTheServerClosed(endpoint, serverClosed: closed)
            #expect(relayed == direct)
            #expect(await relay.eventLog.waitFor(timeout: .seconds(3)) {
                if case .closed(by: .upstream, how: .rst, _, _) = $0.kind { true } else { false }
            } != nil, "the event log says the upstream reset it")
        }
    }

    @Test func aHeldFINIsFollowedByTheReset() async throws {
        let closed = DispatchSemaphore(value: 0)
        let server = try Self.oneShotServer(closed: closed)
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint, faults: [FaultRule(.slowClose(.milliseconds(500)))]) { _, endpoint in
            let relayed = try await Self.afterTheServerClosed(endpoint, serverClosed: closed, finHeld: true)
            #expect(relayed == ["eof", "broken pipe"])
        }
    }
}
