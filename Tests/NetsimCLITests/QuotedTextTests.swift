import Testing
@testable import NetsimRunner

/// A server's bytes quoted in a verdict never reach a terminal as control sequences: a body
/// with ESC [31m coloured the failure report (found by the second exploratory pass).
@Suite("quoted bodies in verdicts")
struct QuotedTextTests {
    @Test func controlCharactersAreEscaped() {
        #expect(quoted("ok\u{1}\u{1b}[31m<&>") == #""ok\u{1}\u{1b}[31m<&>""#)
        #expect(quoted("a\nb\tc\r") == #""a\nb\tc\r""#)
        #expect(quoted("café ✓") == "\"café ✓\"", "printable text is kept as it is")
        // A quote inside is escaped: `body contains ""id""` read as two empty strings.
        #expect(quoted(#""id": 1"#) == #""\"id\": 1""#)
        #expect(quoted(#"a\b"#) == #""a\\b""#)
    }
}
