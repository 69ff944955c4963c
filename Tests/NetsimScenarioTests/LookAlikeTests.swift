import Testing
@testable import NetsimScenario

/// Characters an error's quoted line shows as something else are named by code point (QA 61).
@Suite("Scenario files: hidden and look-alike characters")
struct LookAlikeTests {
    @Test func namesInvisibleCharactersAndOddSpacesAnywhereOnTheLine() throws {
        let note = try #require(LookAlikes.note(line: "  po\u{200B}ol:\u{00A0}4", column: 3))
        #expect(note == "hidden in this line: U+200B ZERO WIDTH SPACE at column 5, U+00A0 NO-BREAK SPACE at column 9; retype them in plain ASCII (a space as U+0020)")
        #expect(LookAlikes.note(line: "  pool: 4", column: 3) == nil)
        #expect(LookAlikes.note(line: "\u{FEFF}name: x", column: 1)?.contains("U+FEFF ZERO WIDTH NO-BREAK SPACE at column 1") == true)
    }

    /// Look-alike letters only in the word the error points at: elsewhere they are text.
    @Test func namesLookAlikeLettersInTheWordPointedAt() throws {
        let line = "  p\u{043E}ol: 4  # пул"
        #expect(try #require(LookAlikes.note(line: line, column: 3)) == "hidden in this line: U+043E CYRILLIC SMALL LETTER O at column 4; retype it in plain ASCII")
        #expect(LookAlikes.note(line: "description: пул соединений", column: 1) == nil)
        #expect(LookAlikes.note(line: "  pool\u{FF1A} 4", column: 3)?.contains("U+FF1A FULLWIDTH COLON at column 7") == true)
        #expect(LookAlikes.note(line: "  caf\u{00E9}: 4", column: 3) == nil)  // a Latin letter is what it looks like
    }

    @Test func namesThreeAndCountsTheRest() throws {
        let note = try #require(LookAlikes.note(line: String(repeating: "\u{200B}", count: 5), column: 1))
        #expect(note.hasSuffix("U+200B ZERO WIDTH SPACE at column 3 and 2 more; retype them in plain ASCII"))
    }

    /// `key:` + U+00A0 + value is one plain value; YAML fails a line later, and the hint names
    /// the line before.
    @Test func aYAMLErrorNamesTheLineBeforeIt() throws {
        let source = "name: x\nseed:\u{00A0}1\ndescription: y\n"
        do {
            _ = try ScenarioParser.parse(source: source, file: "x.scn")
            Issue.record("parsed")
        } catch {
            let text = error.rendered()
            #expect(text.contains("hint: hidden in line 2: U+00A0 NO-BREAK SPACE at column 6"), "\(text)")
            #expect(!text.contains("note:"), "\(text)")
        }
    }
}
