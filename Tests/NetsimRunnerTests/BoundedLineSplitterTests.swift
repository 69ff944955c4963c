@testable import NetsimRunner
import Testing

/// The exec driver's reading of a client's stdout: lines in any chunking, and a line past the
/// limit reported by its start and skipped to its end.
@Suite("exec clients: stdout into lines")
struct BoundedLineSplitterTests {
    typealias Piece = BoundedLineSplitter.Piece

    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func linesComeWholeWhateverTheChunks() {
        var splitter = BoundedLineSplitter(longest: 100)
        #expect(splitter.take(Self.bytes("a")) == [])
        #expect(splitter.take(Self.bytes("b\ncd\n\nef")) == [.line(Self.bytes("ab")), .line(Self.bytes("cd")), .line([])])
        #expect(splitter.take(Self.bytes("\n")) == [.line(Self.bytes("ef"))])
    }

    /// Past the limit: the start once, nothing of the rest, and the next line whole.
    @Test func aLinePastTheLimitIsReportedOnceAndSkippedToItsEnd() {
        var splitter = BoundedLineSplitter(longest: 8)
        splitter.quoted = 4
        #expect(splitter.take(Self.bytes("0123456789")) == [.overlong(start: Self.bytes("0123"))])
        #expect(splitter.take(Self.bytes("abcdefghijklmnop")) == [])
        #expect(splitter.held == 0, "what is skipped is not kept")
        #expect(splitter.take(Self.bytes("qrs\nnext\n")) == [.line(Self.bytes("next"))])
        // A line exactly at the limit is a line.
        #expect(splitter.take(Self.bytes("12345678\n")) == [.line(Self.bytes("12345678"))])
    }
}
