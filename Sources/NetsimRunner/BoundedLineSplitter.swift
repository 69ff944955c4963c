/// Splits a stream of bytes into lines at `\n`, each byte looked at once, and a line past
/// `longest` bytes into its first `quoted` bytes (reported once) and nothing more: what the exec
/// driver reads from a client's stdout.
///
/// Each byte once: a long line came in many reads, and searching the whole buffer for its newline
/// after each (then copying what followed) cost time growing with the square of its length (QA
/// 47: a 1 MB answer added 10 s). Bounded: the rest of an overlong line is dropped as it comes,
/// not kept (QA 62: a 200 MB hello took 1.3 GB and delayed the timeline's start by a second).
struct BoundedLineSplitter {
    enum Piece: Equatable {
        /// A whole line, without its `\n`.
        case line([UInt8])
        /// The start of a line past the limit; the rest of it, to its `\n`, is skipped.
        case overlong(start: [UInt8])
    }

    let longest: Int
    /// How much of an overlong line is kept for its report.
    var quoted = 200
    private var buffer: [UInt8] = []
    /// Where the line being read starts in `buffer`, and how far it was searched for `\n`.
    private var lineStart = 0
    private var searched = 0
    /// Inside an overlong line: bytes are dropped up to its `\n`.
    private var skipping = false

    init(longest: Int) { self.longest = longest }

    /// Bytes held for the line being read: at most `longest` (and a chunk) at any time.
    var held: Int { buffer.count }

    /// The lines (and overlong starts) that `chunk` completes, in order.
    mutating func take(_ chunk: some Sequence<UInt8>) -> [Piece] {
        var pieces: [Piece] = []
        buffer.append(contentsOf: chunk)
        while let newline = buffer[searched...].firstIndex(of: 0x0A) {
            if skipping {
                skipping = false
            } else {
                pieces.append(.line(Array(buffer[lineStart..<newline])))
            }
            lineStart = newline + 1
            searched = lineStart
        }
        searched = buffer.count
        if !skipping, buffer.count - lineStart > longest {
            pieces.append(.overlong(start: Array(buffer[lineStart..<(lineStart + min(quoted, longest))])))
            skipping = true
        }
        if skipping { lineStart = buffer.count }
        if lineStart > 0 {  // keep only the line being read
            buffer.removeFirst(lineStart)
            searched -= lineStart
            lineStart = 0
        }
        return pieces
    }
}
