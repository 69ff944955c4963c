#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import NetsimCore
import NetsimLoopback

// The loopback servers and clients of `netsim bench` and `netsim demo`, on NetsimLoopback's
// blocking sockets: threads, not NIO, so the measuring side never shares the relay's event loops.

/// A ``LoopbackServer`` that counts its running handlers, so ``stop()`` can let them return
/// (they end when their client closes) before the server closes their sockets.
// `@unchecked Sendable`: immutable after init; `DispatchGroup` and `LoopbackServer` are thread-safe.
final class BenchServer: @unchecked Sendable {
    private let server: LoopbackServer
    private let handlers: DispatchGroup

    /// Runs `handler` on its own thread per connection and closes the socket when it returns.
    /// - Parameter host: loopback, or a packet link's host side (the packet part).
    init(host: String = "127.0.0.1", handler: @escaping @Sendable (BlockingSocket) -> Void) throws {
        let handlers = DispatchGroup()
        self.handlers = handlers
        server = try LoopbackServer(host: host) { socket in
            handlers.enter()
            handler(socket)
            socket.close()
            handlers.leave()
        }
    }

    var port: Int { server.endpoint.port }

    /// Waits up to `seconds` for running handlers, then stops the server.
    func stop(waitingUpTo seconds: Double = 5) {
        _ = handlers.wait(timeout: .now() + seconds)
        server.stop()
    }
}

// MARK: Clients

/// Connects to 127.0.0.1:`port`.
func connectLoopback(_ port: Int) throws -> BlockingSocket {
    try BlockingSocket.connect(to: Endpoint(host: "127.0.0.1", port: port))
}

/// Connects, retrying refused connects every 20 ms for up to `seconds` while `starting` holds (a
/// server that is still starting, such as a socat child; `starting` lets a caller give up at once
/// when that child has exited).
func connectLoopback(_ port: Int, retryingFor seconds: Double, while starting: () -> Bool = { true }) throws -> BlockingSocket {
    let deadline = monotonicSeconds() + seconds
    while true {
        do {
            return try connectLoopback(port)
        } catch SocketFailure.refused where monotonicSeconds() < deadline && starting() {
            usleep(20_000)
        }
    }
}

/// A loopback port that was free a moment ago (for tools that need a number up front, like socat).
func freeLoopbackPort() throws -> Int {
    let server = try LoopbackServer { _ in }
    defer { server.stop() }
    return server.endpoint.port
}

// MARK: Threads and time

/// Runs `body` on a new named thread.
func startThread(name: String, _ body: @escaping @Sendable () -> Void) {
    let thread = Thread(block: body)
    thread.name = name
    thread.start()
}

/// CLOCK_MONOTONIC in nanoseconds (the clock NIO's deadlines use).
func monotonicNanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

func monotonicSeconds() -> Double { Double(monotonicNanoseconds()) / 1e9 }

// MARK: Server handlers

enum ServerHandlers {
    /// Sends back whatever arrives until the client closes.
    static func echo(_ connection: BlockingSocket) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        defer { buffer.deallocate() }
        connection.setReceiveTimeout(.seconds(300))
        while let n = try? connection.receiveAvailable(into: buffer), n > 0 {
            guard (try? connection.send(raw: UnsafeRawBufferPointer(rebasing: buffer[..<n]))) != nil else { return }
        }
    }

    /// Writes 256 KiB chunks as fast as the socket takes them until the peer goes away, or
    /// `limit` seconds have passed.
    static func source(limit: Double) -> @Sendable (BlockingSocket) -> Void {
        { connection in
            let chunk = [UInt8](repeating: 0x5A, count: 256 * 1024)
            let deadline = monotonicSeconds() + limit
            chunk.withUnsafeBytes { raw in
                while monotonicSeconds() < deadline, (try? connection.send(raw: raw)) != nil {}
            }
        }
    }

    /// Answers each 8-byte request (a big-endian byte count N) with N bytes, until the client
    /// closes: downloads of a known size on one connection, timed by the client.
    static func sizedAnswers(_ connection: BlockingSocket) {
        let chunk = [UInt8](repeating: 0x5A, count: 256 * 1024)
        let request = UnsafeMutableRawBufferPointer.allocate(byteCount: 8, alignment: 8)
        defer { request.deallocate() }
        connection.setReceiveTimeout(.seconds(300))
        while (try? connection.receiveAll(into: request)) == true {
            var remaining = Int(UInt64(bigEndian: request.load(as: UInt64.self)))
            let sent: Bool = chunk.withUnsafeBytes { raw in
                while remaining > 0 {
                    let n = min(remaining, raw.count)
                    guard (try? connection.send(raw: UnsafeRawBufferPointer(rebasing: raw[..<n]))) != nil else { return false }
                    remaining -= n
                }
                return true
            }
            guard sent else { return }
        }
    }

    /// Reads until end of stream and reports how many bytes came between the first and the last read.
    static func sink(_ tally: SinkTally) -> @Sendable (BlockingSocket) -> Void {
        { connection in
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
            defer { buffer.deallocate() }
            connection.setReceiveTimeout(.seconds(60))
            var result = SinkResult()
            while let n = try? connection.receiveAvailable(into: buffer), n > 0 {
                let now = monotonicNanoseconds()
                if result.bytes == 0 { result.firstByteAt = now }
                result.bytes += n
                result.lastByteAt = now
            }
            tally.report(result)
        }
    }
}

/// What a sink connection received.
struct SinkResult: Sendable {
    var bytes = 0
    var firstByteAt: Int64 = 0
    var lastByteAt: Int64 = 0

    /// Bits per second from the first to the last read.
    var bitsPerSecond: Double {
        let seconds = Double(lastByteAt - firstByteAt) / 1e9
        return seconds > 0 ? Double(bytes) * 8 / seconds : 0
    }
}

/// Hands sink results from the server's threads to the measuring thread.
// `@unchecked Sendable`: `results` is reached only with `condition` held.
final class SinkTally: @unchecked Sendable {
    private let condition = NSCondition()
    private var results: [SinkResult] = []

    func report(_ result: SinkResult) {
        condition.withLock {
            results.append(result)
            condition.broadcast()
        }
    }

    /// The next result, waiting at most `timeout` seconds.
    func next(timeout: Double) -> SinkResult? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        return condition.withLock {
            while results.isEmpty {
                if !condition.wait(until: deadline) { break }
            }
            return results.isEmpty ? nil : results.removeFirst()
        }
    }
}
