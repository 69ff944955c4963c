import Crypto
import Foundation
import NetsimCore
import NetsimLoopback

/// A reproducible byte stream: 1 MiB blocks of seeded noise, each stamped with its index, so a
/// reordered, dropped or repeated block changes the digest.
struct PatternStream {
    static let blockSize = 1 << 20
    let block: [UInt8]

    init(seed: UInt64) {
        // Eight bytes per draw: a byte per draw kept a cooperative thread busy for a long
        // while in a debug build, and the suite's other tests wait for those two threads.
        var random = SeededRandom(seed: seed)
        let words = (0..<Self.blockSize / 8).map { _ in random.next() }
        block = words.withUnsafeBytes { Array($0) }
    }

    func block(_ index: Int) -> [UInt8] {
        var b = block
        withUnsafeBytes(of: UInt64(index).littleEndian) { for i in 0..<8 { b[i] = $0[i] } }
        return b
    }

    /// Sends `blocks` blocks and returns the SHA-256 of what was sent; `before(i)` runs before block `i`.
    func send(_ blocks: Int, on socket: BlockingSocket, before: (Int) -> Void = { _ in }) throws -> SHA256Digest {
        var hash = SHA256()
        for index in 0..<blocks {
            before(index)
            let b = block(index)
            hash.update(data: b)
            try b.withUnsafeBytes { try socket.send(raw: $0) }
        }
        return hash.finalize()
    }

    /// Reads to EOF and returns the SHA-256 and byte count of what arrived; `progress` hears the
    /// count, and `afterRead` runs with it after each read (the reader waits for it).
    static func receive(on socket: BlockingSocket, progress: ByteProgress? = nil,
                        afterRead: (Int) -> Void = { _ in }) throws -> (SHA256Digest, Int) {
        var hash = SHA256()
        var total = 0
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            let n = try socket.receive(into: buffer, timeout: .seconds(30))
            if n == 0 {
                progress?.advance(to: .max)
                return (hash.finalize(), total)
            }
            hash.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            total += n
            progress?.advance(to: total)
            afterRead(total)
        }
    }
}

/// An upstream for two-way transfers: sends `blocks` blocks of `down` to whoever connects while
/// hashing what comes up.
final class PatternServer: Sendable {
    /// SHA-256 of what it sent.
    let sent = ResultBox<SHA256Digest>()
    /// SHA-256 and byte count of what it received, once the client half-closed.
    let received = ResultBox<(digest: SHA256Digest, count: Int)>()
    private let server: LoopbackServer

    /// `pacedBy`: block `i` goes down once the client has had `i` - `lead` blocks, so the stream
    /// stays open until the client is `lead` blocks from its end, with up to `lead` in flight.
    init(blocks: Int, down: PatternStream, pacedBy progress: ByteProgress? = nil, lead: Int = 0) throws {
        let sent = self.sent, received = self.received
        server = try LoopbackServer { socket in
            Thread {
                sent.value = try? down.send(blocks, on: socket) { progress?.wait(until: ($0 - lead) * PatternStream.blockSize) }
                socket.shutdownWrite()
            }.start()
            if let (digest, count) = try? PatternStream.receive(on: socket) { received.value = (digest, count) }
            _ = try? sent.wait()  // the sender thread uses the socket: outlive it
        }
    }

    var endpoint: Endpoint { server.endpoint }
    func stop() { server.stop() }

    /// The client's side through `endpoint`: sends `blocks` blocks of `up` (then half-closes)
    /// while hashing what comes down; what it sent, what it received and how many bytes.
    /// With `progress`: it counts what came down, block `i` goes up once `i` blocks have come
    /// down (so both directions stay open to the end), and `afterRead` runs after each read.
    static func exchange(_ blocks: Int, of up: PatternStream, through endpoint: Endpoint, progress: ByteProgress? = nil,
                         afterRead: @escaping @Sendable (Int) -> Void = { _ in }) async throws
        -> (sent: SHA256Digest, received: SHA256Digest, count: Int) {
        try await offload {
            let socket = try BlockingSocket.connect(to: endpoint)
            let sent = ResultBox<SHA256Digest>()
            Thread {
                sent.value = try? up.send(blocks, on: socket) { progress?.wait(until: $0 * PatternStream.blockSize) }
                socket.shutdownWrite()
            }.start()
            let (digest, count) = try PatternStream.receive(on: socket, progress: progress, afterRead: afterRead)
            return (try sent.wait(), digest, count)
        }
    }
}

/// How many bytes a reader has had, for a sender on another thread to wait on.
final class ByteProgress: @unchecked Sendable {
    private let condition = NSCondition()
    private var count = 0

    func advance(to total: Int) { condition.withLock { count = total; condition.broadcast() } }

    /// Waits until `total` bytes have been had (at most 30 s: the reader times out by then).
    func wait(until total: Int) {
        let deadline = Date(timeIntervalSinceNow: 30)
        condition.withLock { while count < total, condition.wait(until: deadline) {} }
    }
}
