/// One problem found in a scenario file: where, what, and (when it helps) how to fix it.
public struct Diagnostic: Error, Equatable, Sendable, CustomStringConvertible {
    public var location: SourceLocation
    public var message: String
    /// A suggestion: "did you mean 'timeline'?", the accepted spellings of a unit, …
    public var hint: String?

    public init(location: SourceLocation, message: String, hint: String? = nil) {
        self.location = location
        self.message = message
        self.hint = hint
    }

    /// `file:line:col: error: message` (just `file: error: message` when there is no line), its
    /// control characters escaped (``ScenarioErrors/escapingControls(_:)``).
    public var description: String {
        let place = location.line >= 1 ? location.description : location.file
        return ScenarioErrors.escapingControls("\(place): error: \(message)")
    }
}

/// Every problem found in a scenario file, sorted by position, with the file's lines for quoting.
public struct ScenarioErrors: Error, Sendable, CustomStringConvertible {
    public var diagnostics: [Diagnostic]
    public var sourceLines: [String]

    public init(diagnostics: [Diagnostic], sourceLines: [String]) {
        self.diagnostics = diagnostics
        self.sourceLines = sourceLines
    }

    /// All errors, each as `file:line:col: error: message`, then the offending line, then a
    /// caret under the column, then `  hint: …` when there is one, and `  note: …` naming the
    /// characters on the line that are not what they look like (``LookAlikes``). Ends with a
    /// newline.
    public func rendered() -> String {
        var out = ""
        for diagnostic in diagnostics {
            out += diagnostic.description + "\n"
            let line = diagnostic.location.line
            if line >= 1, line <= sourceLines.count {
                let (text, column) = Self.shown(Self.picturingControls(sourceLines[line - 1]), column: diagnostic.location.column)
                out += text + "\n"
                out += Self.caret(under: column, in: text) + "\n"
            }
            if let hint = diagnostic.hint {
                out += "  hint: \(Self.escapingControls(hint))\n"
            }
            if line >= 1, line <= sourceLines.count, diagnostic.hint?.contains("hidden in") != true,
               let note = LookAlikes.note(line: sourceLines[line - 1], column: diagnostic.location.column) {
                out += "  note: \(Self.escapingControls(note))\n"
            }
        }
        return out
    }

    public var description: String { rendered() }

    /// `text` with its control characters (C0 but tab, DEL, C1) and bidirectional overrides as
    /// Swift writes them (`\u{1B}`, `\n`). A scenario's text reaches the terminal in messages
    /// (`'…' is not an HTTP method`) and hints, and an escape sequence in it was obeyed there: it
    /// set colours, cleared the screen, titled the window (QA 61).
    public static func escapingControls(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { isHidden($0) && $0 != "\t" }) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\t": out += "\t"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case _ where isHidden(scalar): out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// A source line as quoted: each control character (but tab) shown as its picture, one
    /// column for one (␛ for ESC, ␇ for BEL, ␡ for DEL; � for a C1 control or a bidirectional
    /// override), so the caret under the column stays where it was.
    static func picturingControls(_ line: String) -> String {
        guard line.unicodeScalars.contains(where: { isHidden($0) && $0 != "\t" }) else { return line }
        var out = String.UnicodeScalarView()
        for scalar in line.unicodeScalars {
            switch scalar.value {
            case 0x09: out.append(scalar)
            case 0x00...0x1F: out.append(Unicode.Scalar(0x2400 + scalar.value)!)
            case 0x7F: out.append("\u{2421}")
            case _ where isHidden(scalar): out.append("\u{FFFD}")
            default: out.append(scalar)
            }
        }
        return String(out)
    }

    /// Control characters, and the bidirectional overrides and isolates that reorder what a
    /// terminal shows (U+202A–U+202E, U+2066–U+2069).
    static func isHidden(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.generalCategory == .control || (0x202A...0x202E).contains(scalar.value) || (0x2066...0x2069).contains(scalar.value)
    }

    /// The longest source line an error shows whole.
    static let widestShown = 160

    /// The source line as an error shows it, and the column within that: whole when it is short;
    /// otherwise ``widestShown`` characters around the column, `…` where it was cut (a 10,000-
    /// character line of nested brackets was echoed whole).
    static func shown(_ line: String, column: Int) -> (text: String, column: Int) {
        let scalars = Array(line.unicodeScalars)
        guard scalars.count > widestShown else { return (line, column) }
        let start = max(0, min(column - 1 - widestShown / 2, scalars.count - widestShown))
        let end = min(scalars.count, start + widestShown)
        var text = String(String.UnicodeScalarView(scalars[start..<end]))
        if end < scalars.count { text += "…" }
        guard start > 0 else { return (text, column) }
        return ("…" + text, column - start + 1)
    }

    /// Spaces up to the column (tabs kept, so the caret lines up however tabs are shown; two for a
    /// character a terminal shows two cells wide, as 日本, none for a combining mark), then `^`.
    ///
    /// The column counts scalars, a terminal draws characters: a character of several scalars
    /// (e + U+0301, 👍 + a skin tone, a ZWJ family) takes the cells of its widest scalar, at its
    /// first one.
    static func caret(under column: Int, in line: String) -> String {
        var pad = ""
        var scalarsLeft = max(0, column - 1)
        for character in line where scalarsLeft > 0 {
            let scalars = character.unicodeScalars
            scalarsLeft -= scalars.count
            pad += character == "\t" ? "\t" : isWide(character) ? "  " : scalars.allSatisfy(isZeroWidth) ? "" : " "
        }
        let missing = max(0, column - 1) - line.unicodeScalars.count
        if missing > 0 { pad += String(repeating: " ", count: missing) }
        return pad + "^"
    }

    /// Combining marks and format characters (U+0301 after an e, U+200B, U+FEFF): no cell.
    static func isZeroWidth(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: true
        default: false
        }
    }

    /// A character drawn two cells wide: one with a wide scalar, a flag (two regional
    /// indicators), or one asking for emoji presentation (U+FE0F: ❤️, the keycap 1️⃣).
    static func isWide(_ character: Character) -> Bool {
        character.unicodeScalars.contains { isWide($0) || $0.value == 0xFE0F || (0x1F1E6...0x1F1FF).contains($0.value) }
    }

    /// East Asian wide and fullwidth characters, and emoji: two terminal cells (the main blocks of
    /// Unicode's EastAsianWidth W and F; combining marks and the rest count one).
    static func isWide(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF,
             0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60, 0xFFE0...0xFFE6,
             0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x20000...0x3FFFD: true
        default: false
        }
    }
}

extension ScenarioErrors {
    /// The file's lines as quoted in diagnostics: split at `\n`, a trailing `\r` removed.
    public static func lines(of source: String) -> [String] {
        // As YAML counts lines: "\n", "\r\n" or a lone "\r" (old Mac files) ends one. On
        // scalars: "\r\n" is a single Character.
        var lines: [String] = []
        var current = String.UnicodeScalarView()
        var afterCR = false
        for scalar in source.unicodeScalars {
            if scalar == "\n", afterCR {
                afterCR = false
                continue  // the second half of "\r\n"
            }
            afterCR = scalar == "\r"
            if scalar == "\n" || scalar == "\r" {
                lines.append(String(current))
                current = String.UnicodeScalarView()
            } else {
                current.append(scalar)
            }
        }
        lines.append(String(current))
        return lines
    }
}
