import Foundation
import Testing
@testable import NetsimScenario

/// How problems are collected and shown.
@Suite("Scenario files: diagnostics")
struct DiagnosticTests {
    static let file = "Scenarios/broken.scn"

    func failure(_ text: String) -> ScenarioErrors? {
        do {
            _ = try ScenarioParser.parse(source: text, file: Self.file)
            return nil
        } catch {
            return error
        }
    }

    static let manyMistakes = """
        name: broken
        description: Five unrelated mistakes.
        seed: -1
        upstream:
          routes:
            - path: feed
        link:
          latency: 100
        client:
          driver: exec
        timeline:
          - request: a
            path: /feed
            count: 2
            parallel: 3
        expect:
          - request: b
            status: 200

        """

    @Test func everyErrorIsReportedInFileOrder() throws {
        let errors = try #require(failure(Self.manyMistakes))
        let found = errors.diagnostics.map { "\($0.location.line):\($0.location.column) \($0.message)" }
        #expect(found == [
            "3:7 'seed' must be a whole number from 0 to 18446744073709551615, found '-1'",
            "6:13 path 'feed' must start with '/'",
            "8:12 latency: '100' is not a duration",
            "10:3 the exec driver needs 'command': the program to run and its arguments",
            "15:15 'parallel' (3) cannot exceed 'count' (2)",
            "17:14 no request named 'b' in the timeline",
        ])
        #expect(errors.diagnostics.allSatisfy { $0.location.file == Self.file })
    }

    @Test func renderingQuotesTheLineAndPointsAtTheColumn() throws {
        let errors = try #require(failure(Self.manyMistakes.replacingOccurrences(of: "timeline:", with: "timelin:")))
        let text = errors.rendered()
        #expect(text.hasPrefix("""
            Scenarios/broken.scn:3:7: error: 'seed' must be a whole number from 0 to 18446744073709551615, found '-1'
            seed: -1
                  ^
              hint: the seed makes random choices repeatable; any whole number in that range will do

            """))
        #expect(text.contains("""
            Scenarios/broken.scn:11:1: error: unknown key 'timelin' in the scenario
            timelin:
            ^
              hint: did you mean 'timeline'?

            """))
        // The misspelling is the whole story: no "missing required key 'timeline'" as well.
        #expect(!text.contains("missing required key 'timeline'"))
        #expect(text.hasSuffix("\n"))
    }

    @Test func caretKeepsTabsSoItLinesUp() {
        #expect(ScenarioErrors.caret(under: 4, in: "\tab: c") == "\t  ^")
        #expect(ScenarioErrors.caret(under: 1, in: "") == "^")
        #expect(ScenarioErrors.caret(under: 3, in: "") == "  ^")
    }

    /// A character a terminal shows two cells wide moves the caret two (QA 40: under
    /// `body: "日本語日本語", status: 700` it sat six cells left of 700).
    @Test func caretSkipsTwoCellsForAWideCharacter() {
        #expect(ScenarioErrors.caret(under: 5, in: "日本: 7") == "      ^")
        #expect(ScenarioErrors.caret(under: 4, in: "é: 7") == "   ^", "an accented letter is one cell")
        #expect(ScenarioErrors.caret(under: 5, in: "e\u{301}: 7") == "   ^", "so is one written e + a combining accent (QA 42)")
        #expect(ScenarioErrors.caret(under: 5, in: "👍🏽: 7") == "    ^", "an emoji with a skin tone is one two-cell character (QA 42)")
        #expect(ScenarioErrors.caret(under: 8, in: "👨\u{200D}👩\u{200D}👧: 7") == "    ^", "so is a ZWJ family")
        // A flag, a keycap and ❤️ with U+FE0F are drawn two cells wide too (QA 46).
        #expect(ScenarioErrors.caret(under: 5, in: "🇫🇷: 7") == "    ^")
        #expect(ScenarioErrors.caret(under: 6, in: "1\u{FE0F}\u{20E3}: 7") == "    ^")
        #expect(ScenarioErrors.caret(under: 5, in: "\u{2764}\u{FE0F}: 7") == "    ^")
    }

    @Test func aLongLineIsShownAroundTheColumn() {
        let line = String(repeating: "[", count: 5_000) + "x" + String(repeating: "]", count: 5_000)
        let (text, column) = ScenarioErrors.shown(line, column: 5_001)
        #expect(text.unicodeScalars.count == ScenarioErrors.widestShown + 2 && text.hasPrefix("…[") && text.hasSuffix("]…"))
        #expect(Array(text.unicodeScalars)[column - 1] == "x", "the caret still points at the column")
        #expect(ScenarioErrors.shown("key: value", column: 6) == ("key: value", 6))
        let start = ScenarioErrors.shown(String(repeating: "a", count: 500), column: 3)
        #expect(start.column == 3 && !start.text.hasPrefix("…") && start.text.hasSuffix("…"))
    }

    @Test func aMissingFileIsOneDiagnostic() {
        do {
            _ = try ScenarioParser.parse(file: "Scenarios/does-not-exist.scn")
            Issue.record("parsed a missing file")
        } catch {
            #expect(error.diagnostics.count == 1)
            #expect(error.rendered() == "Scenarios/does-not-exist.scn: error: no such file\n")
        }
    }

    /// A device is read as a file is (QA 61: /dev/null was "cannot read the file").
    @Test func devNullIsAnEmptyScenario() {
        do {
            _ = try ScenarioParser.parse(file: "/dev/null")
            Issue.record("parsed /dev/null")
        } catch {
            #expect(error.diagnostics.map(\.message) == ["the scenario is empty"])
        }
    }

    @Test func aDirectoryIsNotAScenario() {
        do {
            _ = try ScenarioParser.parse(file: NSTemporaryDirectory())
            Issue.record("parsed a directory")
        } catch {
            #expect(error.diagnostics.map(\.message) == ["is a directory, not a scenario file"])
        }
    }

    @Test func duplicateKeysAreAllReportedAtTheRepeats() throws {
        let text = Self.manyMistakes
            .replacingOccurrences(of: "seed: -1", with: "seed: 1\nseed: 2")
            .replacingOccurrences(of: "  driver: exec", with: "  driver: naive\n  driver: exec\n  driver: naive")
        let errors = try #require(failure(text))
        let duplicates = errors.diagnostics.filter { $0.message.hasPrefix("duplicate key") }
        #expect(duplicates.map(\.location.line) == [4, 12, 13])
        #expect(duplicates[0].message == "duplicate key 'seed' in the scenario; it was already given at line 3")
        // The first 'driver' (naive) is the one used: no "needs 'command'" error.
        #expect(!errors.diagnostics.contains { $0.message.contains("exec driver") })
    }

    /// A line break in a path is a character to percent-encode, not white space to write as
    /// %20 (QA 61); a space is.
    @Test func aPathIsToldHowToWriteWhatItCannotCarry() throws {
        for (written, message, hint) in [
            (#""/fe\ned""#, "path '/fe\ned' has characters a request line cannot carry (not ASCII, or control characters)", "'/fe%0Aed'"),
            (#""/fe\ted""#, "path '/fe\ted' has characters a request line cannot carry (not ASCII, or control characters)", "'/fe%09ed'"),
            ("/fe ed", "path '/fe ed' contains white space", "percent-encode spaces as %20"),
        ] {
            let errors = try #require(failure(Self.manyMistakes.replacingOccurrences(of: "path: feed", with: "path: \(written)")))
            let diagnostic = try #require(errors.diagnostics.first { $0.location.line == 6 }, "\(errors.diagnostics)")
            #expect(diagnostic.message == message)
            #expect(diagnostic.hint?.contains(hint) == true, "\(diagnostic.hint ?? "")")
        }
    }

    /// A word that must be one of a few says which (QA 61: "'judges' must be judges, found a
    /// list").
    @Test func aWordOfAFewNamesThemWhenSomethingElseIsGiven() throws {
        let errors = try #require(failure(Self.manyMistakes.replacingOccurrences(of: "  driver: exec", with: "  driver: [naive]")))
        #expect(errors.diagnostics.contains { $0.message == "'driver' must be one of exec, urlsession, async-http-client, naive, resilient, found a list" },
                "\(errors.diagnostics.map(\.message))")
    }

    /// Each repeated key composes the whole file again, so a big generated file with hundreds
    /// took their product (QA 61: 900 in 219 KB, 35 s). The renaming stops at a budget of text
    /// composed, and the one error left says so.
    @Test func manyDuplicateKeysInABigFileStopAtABudget() throws {
        let routes = (0..<400).map { "    - path: /r\($0)\n      body: one\n      body: two\n" }.joined()
        let text = Self.manyMistakes.replacingOccurrences(of: "    - path: feed\n", with: routes)
        let budget = YAMLDocument.renamingBudget / text.utf8.count
        #expect(budget < 400)
        let errors = try #require(failure(text))
        #expect(errors.diagnostics.map(\.message) == ["duplicate key 'body' in one mapping, and more: \(budget) repeated keys found before netsim stopped looking"])
    }

    @Test func didYouMeanOnlyForCloseWords() {
        #expect(closestMatch(to: "timelin", among: Validator.topLevelKeys) == "timeline")
        #expect(closestMatch(to: "Expect", among: Validator.topLevelKeys) == "expect")
        #expect(closestMatch(to: "colour", among: Validator.topLevelKeys) == nil)
        #expect(editDistance("kitten", "sitting") == 3)
    }

    @Test func aYAMLSyntaxErrorStopsAtOnePositionedDiagnostic() throws {
        let errors = try #require(failure("name: x\n  bad: indent\n"))
        #expect(errors.diagnostics == [Diagnostic(
            location: Location(file: Self.file, line: 2, column: 6),
            message: "invalid YAML: mapping values are not allowed in this context",
            hint: "check this line's indentation, and quote a value that contains ': '")])
    }

    /// A control character libyaml's reader refuses is placed by scalars and by YAML's line ends
    /// (QA 61: counted in Characters, a CRLF file's error at line 10 was at 1:144, and after a
    /// skin-toned emoji the column was short by one); a tab in a CRLF file's indentation gets
    /// the tab hint (it was lost: "\r\n" is one Character, never "\n").
    @Test func readerErrorsAndTabHintsArePlacedInCRLFFiles() throws {
        let crlf = try #require(failure("name: x\r\ndescription: d\r\nseed: 3\u{7}\r\n"))
        #expect(crlf.diagnostics.map { "\($0.location.line):\($0.location.column)" } == ["3:8"], "\(crlf.diagnostics)")
        let emoji = try #require(failure("name: x\ndescription: \"👍🏽 \u{7}\"\n"))
        #expect(emoji.diagnostics.map { "\($0.location.line):\($0.location.column)" } == ["2:18"], "\(emoji.diagnostics)")
        let lone = try #require(failure("name: x\rdescription: d\r\u{7}\r"))
        #expect(lone.diagnostics.map { "\($0.location.line):\($0.location.column)" } == ["3:1"], "\(lone.diagnostics)")
        let tab = try #require(failure("name: x\r\ndescription: d\r\nclient:\r\n\tdriver: naive\r\n"))
        #expect(tab.diagnostics.first?.hint == YAMLDocument.tabHint, "\(tab.diagnostics)")
    }

    /// A scenario's text reaches the terminal in messages, hints and quoted lines: its control
    /// characters are escaped or pictured, never sent (QA 61: `method: "\e[31mGET"` coloured the
    /// terminal, a key of `\e[2J` cleared it). A quoted line keeps one column per character, so
    /// the caret still points at the right one.
    @Test func controlCharactersAreShownNotObeyed() throws {
        let errors = try #require(failure(Self.manyMistakes.replacingOccurrences(of: "path: feed", with: "path: \"fe\\e]0;x\\aed\"")))
        let text = errors.rendered()
        #expect(!text.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 }, "\(text.debugDescription)")
        #expect(text.contains(#"path 'fe\u{1B}]0;x\u{7}ed' must start with '/'"#), "\(text)")
        #expect(ScenarioErrors.escapingControls("a\u{202E}b\nc\td") == #"a\u{202E}b\nc"# + "\td")  // a tab is harmless
        #expect(ScenarioErrors.picturingControls("x\u{1B}[2J\ty\u{7F}") == "x␛[2J\ty␡")
        let rendered = ScenarioErrors(diagnostics: [Diagnostic(location: Location(file: Self.file, line: 1, column: 4), message: "m",
                                                               hint: "h\u{1B}")], sourceLines: ["ab\u{1B}c"]).rendered()
        #expect(rendered == "\(Self.file):1:4: error: m\nab␛c\n   ^\n  hint: h\\u{1B}\n", "\(rendered)")
    }
}
