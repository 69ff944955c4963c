/// A run of stream bytes that arrived in one segment, and when.
public struct StreamChunk: Sendable, Equatable {
    public var offset: Int
    public var length: Int
    public var time: Int64
}

/// One direction of a TCP connection as the application saw it: every byte once, in order.
public struct ReassembledStream: Sendable {
    public var bytes: [UInt8] = []
    /// Where each byte came from, in stream order (for timing: when did byte N arrive?).
    public var chunks: [StreamChunk] = []
    /// Byte ranges never captured (lost before the capture point, cut by the snaplen, or before
    /// a capture that started mid-flow); they hold zeros in ``bytes``.
    public var missing: [Range<Int>] = []
    /// Bytes the headers announced after the last captured byte (cut by the snaplen).
    public var missingAtEnd = 0
    /// Of the bytes in ``missing`` and ``missingAtEnd``, those a captured segment announced but
    /// the snaplen cut off; the rest were never on the wire where the capture was made.
    public var cutBySnaplen = 0
    /// Segments dropped because their sequence number was implausibly far away (a damaged file).
    public var discardedSegments = 0
    /// Whether a FIN ended this direction.
    public var finished = false

    public var isComplete: Bool { missing.isEmpty && missingAtEnd == 0 }

    /// When the byte at `offset` was captured.
    public func time(at offset: Int) -> Int64? {
        var low = 0
        var high = chunks.count - 1
        while low <= high {
            let mid = (low + high) / 2
            let chunk = chunks[mid]
            if offset < chunk.offset { high = mid - 1 } else if offset >= chunk.offset + chunk.length { low = mid + 1 } else { return chunk.time }
        }
        return nil
    }

    /// The chunks overlapping `range`, clipped to it.
    public func chunks(in range: Range<Int>) -> [StreamChunk] {
        chunks.compactMap { chunk in
            let start = max(chunk.offset, range.lowerBound)
            let end = min(chunk.offset + chunk.length, range.upperBound)
            return start < end ? StreamChunk(offset: start, length: end - start, time: chunk.time) : nil
        }
    }
}

/// Puts one direction's segments back in stream order.
///
/// Survives what real captures contain: retransmissions (bytes already placed are not placed
/// again), overlapping segments (where retransmitted bytes differ, the segment that starts
/// earlier in the stream wins, then the earlier capture), out-of-order arrival (segments are
/// sorted by their unwrapped sequence number), sequence wrap-around, a capture that starts
/// mid-flow (the stream starts at the lowest sequence number seen) and packets cut by the
/// snaplen (the missing bytes are reported and zero-filled).
struct StreamReassembler {
    private struct Piece {
        var offset: Int64
        var bytes: [UInt8]
        var declared: Int
        var time: Int64
    }

    /// No zero-filling of gaps larger than this: a damaged sequence number must not allocate
    /// gigabytes.
    static let largestFilledGap: Int64 = 16 << 20
    /// Nor more than this in all, however many gaps a damaged file has.
    static let largestTotalFill = 64 << 20

    /// The sequence number of stream offset 0.
    private var base: UInt32?
    private var synSeen = false
    private var highest: Int64 = 0
    private var pieces: [Piece] = []
    private var finSeen = false

    mutating func add(_ segment: TCPSegment) {
        if segment.flags.contains(.syn) {
            if base == nil {
                base = segment.seq &+ 1
                synSeen = true
            }
            return
        }
        let fin = segment.flags.contains(.fin)
        guard segment.payloadLength > 0 || fin, !segment.flags.contains(.rst) else { return }
        if base == nil { base = segment.seq }
        let offset = unwrap(segment.seq)
        if segment.payloadLength > 0 {
            pieces.append(Piece(offset: offset, bytes: segment.payload, declared: segment.payloadLength, time: segment.time))
            highest = max(highest, offset + Int64(segment.payloadLength))
        }
        if fin { finSeen = true }
    }

    /// The offset of `seq`, choosing the wrap-around nearest the highest offset seen so far.
    private func unwrap(_ seq: UInt32) -> Int64 {
        let relative = seq &- (base ?? seq)
        let difference = Int32(bitPattern: relative &- UInt32(truncatingIfNeeded: highest))
        return highest + Int64(difference)
    }

    func assemble() -> ReassembledStream {
        var stream = ReassembledStream()
        stream.finished = finSeen
        let sorted = pieces.enumerated().sorted { a, b in
            a.element.offset != b.element.offset ? a.element.offset < b.element.offset : a.offset < b.offset
        }.map(\.element)
        guard let first = sorted.first else { return stream }
        var next: Int64 = synSeen ? 0 : first.offset
        let start = next
        var declaredEnd = next
        var filled = 0
        for piece in sorted {
            let capturedEnd = piece.offset + Int64(piece.bytes.count)
            // A gap below the end an earlier segment announced is that segment's cut tail.
            let announcedBefore = declaredEnd
            declaredEnd = max(declaredEnd, piece.offset + Int64(piece.declared))
            guard capturedEnd > next else { continue }
            if piece.offset > next {
                guard piece.offset - next <= Self.largestFilledGap, filled + Int(piece.offset - next) <= Self.largestTotalFill else {
                    stream.discardedSegments += 1
                    continue
                }
                let gap = Int(piece.offset - next)
                stream.cutBySnaplen += Int(max(0, min(piece.offset, announcedBefore) - next))
                filled += gap
                let at = Int(next - start)
                stream.missing.append(at..<(at + gap))
                stream.bytes.append(contentsOf: repeatElement(0, count: gap))
                next = piece.offset
            }
            let skip = Int(next - piece.offset)
            let at = Int(next - start)
            stream.bytes.append(contentsOf: piece.bytes[skip...])
            stream.chunks.append(StreamChunk(offset: at, length: piece.bytes.count - skip, time: piece.time))
            next = capturedEnd
        }
        if declaredEnd > next, declaredEnd - next <= Self.largestFilledGap {
            stream.missingAtEnd = Int(declaredEnd - next)
            stream.cutBySnaplen += stream.missingAtEnd
        }
        return stream
    }
}
