import Foundation
import NIOCore
import NetsimCore
import NetsimLoopback
import NetsimRelay
import Testing

/// A client's reset that comes while the relay still connects upstream: the upstream, once
/// connected, is reset too, as the server would have been on a direct path.
@Suite("a reset before the upstream connected")
struct EarlyResetTests {
    /// Connects as `inner` does, and completes only `delay` later: the client's reset lands
    /// while the connect is in flight, every time.
    struct SlowConnector: UpstreamConnector {
        let inner: AddressConnector
        let delay: TimeAmount
        var name: String { inner.name }
        func connect(for connection: ConnectionID, on eventLoop: any EventLoop, timeout: Duration,
                     initializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>) -> EventLoopFuture<any Channel> {
            inner.connect(for: connection, on: eventLoop, timeout: timeout, initializer: initializer).flatMap { channel in
                eventLoop.scheduleTask(in: delay) { channel }.futureResult
            }
        }
    }

    /// How the upstream's connections ended, as its handler threads saw them.
    final class Ended: @unchecked Sendable {
        private let lock = NSLock()
        private var ends: [String] = []
        func add(_ how: String) { lock.withLock { ends.append(how) } }
        var all: [String] { lock.withLock { ends } }
    }

    /// QA 37: the upstream saw a clean EOF (the relay closed the late connection with FIN),
    /// though the client had reset.
    @Test func theUpstreamConnectedAfterTheClientsResetIsResetToo() async throws {
        let ended = Ended()
        let done = DispatchSemaphore(value: 0)
        let server = try LoopbackServer { socket in
            let how: String
            do { how = try socket.receiveToEnd(timeout: .seconds(10)).isEmpty ? "eof" : "eof after bytes" } catch let failure as SocketFailure {
                how = failure == .reset ? "reset" : "\(failure)"
            } catch { how = "\(error)" }
            ended.add(how)
            done.signal()
        }
        defer { server.stop() }
        let log = EventLog()
        let relay = Relay(configuration: RelayConfiguration(upstream: server.endpoint), eventLog: log,
                          connector: SlowConnector(inner: try AddressConnector(resolving: server.endpoint), delay: .milliseconds(300)))
        let endpoint = try await relay.start()
        try await offload {
            let socket = try BlockingSocket.connect(to: endpoint)
            try socket.send([UInt8](repeating: 0x61, count: 100))
            socket.reset()
        }
        let closed = await log.waitFor(timeout: .seconds(10)) { if case .closed(.client, .rst, _, _) = $0.kind { true } else { false } }
        let seen = try await offload { done.wait(timeout: .now() + 10) == .success }
        await relay.stop()
        #expect(closed != nil, "the relay logged the client's reset")
        #expect(seen, "the upstream never saw its connection end")
        #expect(ended.all == ["reset"])
    }
}
