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
        var random = SeededRandom(seed: seed)
        block = (0..<Self.blockSize).map { _ in UInt8(truncatingIfNeeded: random.next()) }
    }

    func block(_ index: Int) -> [UInt8] {
        var b = block
        withUnsafeBytes(of: UInt64(index).littleEndian) { for i in 0..<8 { b[i] = $0[i] } }
        return b
    }

    /// Sends `blocks` blocks and returns the SHA-256 of what was sent.
    func send(_ blocks: Int, on socket: BlockingSocket) throws -> SHA256Digest {
        var hash = SHA256()
        for index in 0..<blocks {
            let b = block(index)
            hash.update(data: b)
            try b.withUnsafeBytes { try socket.send(raw: $0) }
        }
        return hash.finalize()
    }

    /// Reads to EOF and returns the SHA-256 and byte count of what arrived.
    static func receive(on socket: BlockingSocket) throws -> (SHA256Digest, Int) {
        var hash = SHA256()
        var total = 0
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            let n = try socket.receive(into: buffer, timeout: .seconds(30))
            if n == 0 { return (hash.finalize(), total) }
            hash.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            total += n
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

    init(blocks: Int, down: PatternStream) throws {
        let sent = self.sent, received = self.received
        server = try LoopbackServer { socket in
            Thread { sent.value = try? down.send(blocks, on: socket); socket.shutdownWrite() }.start()
            if let (digest, count) = try? PatternStream.receive(on: socket) { received.value = (digest, count) }
            _ = try? sent.wait()  // the sender thread uses the socket: outlive it
        }
    }

    var endpoint: Endpoint { server.endpoint }
    func stop() { server.stop() }

    /// The client's side through `endpoint`: sends `blocks` blocks of `up` (then half-closes)
    /// while hashing what comes down; what it sent, what it received and how many bytes.
    static func exchange(_ blocks: Int, of up: PatternStream, through endpoint: Endpoint) async throws
        -> (sent: SHA256Digest, received: SHA256Digest, count: Int) {
        try await offload {
            let socket = try BlockingSocket.connect(to: endpoint)
            let sent = ResultBox<SHA256Digest>()
            Thread { sent.value = try? up.send(blocks, on: socket); socket.shutdownWrite() }.start()
            let (digest, count) = try PatternStream.receive(on: socket)
            return (try sent.wait(), digest, count)
        }
    }
}
