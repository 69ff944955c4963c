import NetsimCore

/// The bytes of ``HTTPBody/generated(bytes:)`` bodies.
///
/// An N-byte body is a 64 KiB pseudo-random block, seeded by N, repeated and cut at N bytes. The
/// same N always gives the same bytes (so the runner can compute the expected digest), different
/// sizes give different bytes (so a body cut short or swapped for another route's does not pass
/// a digest check by accident), and the server streams any size from one block without holding
/// the whole body in memory.
public enum GeneratedBody {
    /// Length of the repeated block.
    public static let blockSize = 64 * 1024

    /// The block an N-byte body repeats (`min(N, blockSize)` bytes of it are used at most).
    public static func block(forSize size: Int) -> [UInt8] {
        var random = SeededRandom(seed: UInt64(max(0, size))).derived(SeededRandom.label("netsim.http.generated-body"))
        var block = [UInt8](repeating: 0, count: blockSize)
        block.withUnsafeMutableBytes { raw in
            for word in 0..<(blockSize / 8) {
                raw.storeBytes(of: random.next().littleEndian, toByteOffset: word * 8, as: UInt64.self)
            }
        }
        return block
    }

    /// The whole body of `size` bytes.
    public static func bytes(_ size: Int) -> [UInt8] {
        guard size > 0 else { return [] }
        let block = block(forSize: size)
        var body: [UInt8] = []
        body.reserveCapacity(size)
        while body.count < size {
            body += block.prefix(size - body.count)
        }
        return body
    }
}

extension HTTPBody {
    /// How many bytes the body is on the wire.
    public var byteCount: Int {
        switch self {
        case .text(let text): text.utf8.count
        case .generated(let bytes): max(0, bytes)
        }
    }

    /// The body's bytes (a generated body is materialised: mind large sizes).
    public var bytes: [UInt8] {
        switch self {
        case .text(let text): Array(text.utf8)
        case .generated(let size): GeneratedBody.bytes(size)
        }
    }
}
