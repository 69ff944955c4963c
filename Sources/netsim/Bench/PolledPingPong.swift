import Dispatch
import Foundation
import NetsimCore
import NetsimLoopback

/// Ping-pongs in which one thread is both the client and the echo server and never sleeps: it
/// polls both ends of the path with non-blocking reads.
///
/// Why: a thread blocked in recv(2) for 50 ms wakes 0.1–0.4 ms late on this VM (docs/benchmarks.md,
/// "Injected latency"), and a blocking client and echo server each pay that once per ping-pong, so
/// the blocking measurement holds their lateness as well as the relay's. Polled, every byte is seen
/// the moment it arrives, and what remains beyond the injected delay is the path's own: the relay's
/// release timers and reads. The price is one core spinning for the length of the measurement.
final class PolledEcho: @unchecked Sendable {
    private let server: LoopbackServer
    /// Accepted sockets waiting for ``connect(through:)`` to take them.
    private let accepted = SocketHandOff()
    /// Signalled once per accepted connection at ``stop()``: each handler thread holds its socket
    /// open (the server closes it when the handler returns) until the measurement is over.
    private let release = DispatchSemaphore(value: 0)
    private let holders = DispatchGroup()

    init() throws {
        let accepted = accepted, release = release, holders = holders
        server = try LoopbackServer { socket in
            holders.enter()
            accepted.put(socket)
            release.wait()
            holders.leave()
        }
    }

    /// The port the echo side listens on: connect to it directly, or give it to a relay as its upstream.
    var port: Int { server.endpoint.port }

    /// Connects to `port` (this echo's, or a relay's in front of it) and returns both ends of the
    /// connection as this echo sees them: the client socket and the accepted one.
    func connect(through port: Int) throws -> (client: BlockingSocket, server: BlockingSocket) {
        let client = try connectLoopback(port)
        guard let server = accepted.take(timeout: 10) else {
            client.close()
            throw RuntimeError("the polled echo accepted no connection within 10 s")
        }
        return (client, server)
    }

    /// `count` ping-pongs of `size` bytes: the client end sends, the server end reads and sends the
    /// message back, the client end reads it; each round trip (ns) goes to `record`.
    static func pingPong(
        _ ends: (client: BlockingSocket, server: BlockingSocket), size: Int = RoundTripBench.messageSize, count: Int,
        record: (UInt64) -> Void
    ) throws {
        let message = [UInt8](repeating: 0x42, count: size)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
        defer { buffer.deallocate() }
        try message.withUnsafeBytes { raw in
            for _ in 0..<count {
                let start = monotonicNanoseconds()
                let deadline = start + 10_000_000_000
                try ends.client.send(raw: raw)
                guard try ends.server.receiveAllPolling(into: buffer, deadline: deadline) else {
                    throw RuntimeError("the relay closed the echo side's connection")
                }
                try ends.server.send(raw: UnsafeRawBufferPointer(buffer))
                guard try ends.client.receiveAllPolling(into: buffer, deadline: deadline) else {
                    throw RuntimeError("the relay closed the client's connection")
                }
                record(UInt64(monotonicNanoseconds() - start))
            }
        }
    }

    /// Lets every held connection go (the server closes them) and stops listening.
    func stop() {
        for _ in 0..<server.acceptedCount { release.signal() }
        _ = holders.wait(timeout: .now() + 5)
        server.stop()
    }
}

/// Accepted sockets handed from the server's threads to the measuring thread, in order.
private final class SocketHandOff: @unchecked Sendable {
    private let lock = NSLock()
    private var sockets: [BlockingSocket] = []
    private let available = DispatchSemaphore(value: 0)

    func put(_ socket: BlockingSocket) {
        lock.withLock { sockets.append(socket) }
        available.signal()
    }

    /// The oldest socket not yet taken, waiting up to `timeout` seconds for one.
    func take(timeout: Double) -> BlockingSocket? {
        guard available.wait(timeout: .now() + timeout) == .success else { return nil }
        return lock.withLock { sockets.removeFirst() }
    }
}
