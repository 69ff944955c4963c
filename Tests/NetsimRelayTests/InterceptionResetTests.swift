import Foundation
import NetsimCore
import NetsimLoopback
import NetsimRelay
import Testing

/// A client that resets its connection while the relay is writing answers to it: the relay's
/// write fails (ECONNRESET, EPIPE) and NIO closes the socket with no error event, the reset
/// consumed by the write. The relay took that close for the client's FIN (QA 34: under
/// `--tls intercept`, 14 of 50 such resets were logged `half_closed`/`closed by client, fin`,
/// and the server was sent a FIN instead of a reset).
@Suite("a client's reset while the relay writes", .serialized)
struct InterceptionResetTests {
    /// 3 pipelined requests for 6 MiB each over intercepted TLS, 20 ms of reading, then close with
    /// SO_LINGER 0: a reset while the answers stream. 12 connections, one after another.
    static let client = """
        import socket, ssl, struct, sys, time
        port, ca = int(sys.argv[1]), sys.argv[2]
        context = ssl.create_default_context(cafile=ca)
        for _ in range(12):
            raw = socket.create_connection(("127.0.0.1", port), timeout=10)
            tls = context.wrap_socket(raw, server_hostname="localhost")
            tls.sendall(b"GET /large HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n" * 3)
            deadline = time.monotonic() + 0.02
            while time.monotonic() < deadline:
                if not tls.recv(65536):
                    break
            tls.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            tls.close()
        print("done", flush=True)
        """

    @Test func aResetWhileTheRelayWritesIsLoggedAsTheClientsReset() async throws {
        let setup = try InterceptionTests.Setup(upstreamProtocols: [.http1])
        let (relay, endpoint) = try await setup.relay()
        let result = try await WatchedProcess(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", Self.client, "\(endpoint.port)", setup.caFile])
            .result(within: .seconds(60))
        // Every connection's end is logged before the relay stops (which would close it itself).
        var ends: [Event] = []
        let deadline = ContinuousClock.now + .seconds(30)
        for id in 1...UInt64(12) {
            let end = await relay.eventLog.waitFor(timeout: max(.zero, deadline - .now)) { event in
                if case .closed = event.kind { event.connection == ConnectionID(id) } else { false }
            }
            if let end { ends.append(end) }
        }
        await relay.stop()
        await setup.server.stop()
        #expect(result.status == 0 && result.standardOutput.contains("done"), "\(result.standardError)")
        let closes = ends.compactMap { event -> String? in
            if case .closed(let by, let how, _, _) = event.kind { "\(by) \(how)" } else { nil }
        }
        #expect(closes == Array(repeating: "client rst", count: 12), "\(closes)")
        let halfClosed = relay.eventLog.events.filter { if case .halfClosed(by: .client) = $0.kind { true } else { false } }
        #expect(halfClosed.isEmpty, "the client never sent FIN: \(halfClosed.count) half_closed by client")
    }
}
