/// Characters an error's quoted line cannot show for what they are: invisible ones (U+200B
/// ZERO WIDTH SPACE, U+FEFF), spaces that are not U+0020 (U+00A0 NO-BREAK SPACE, which YAML does
/// not take as a space), and letters that look like ASCII ones (Cyrillic о, Greek ο, fullwidth
/// ｏ). Pasted from a chat or a word processor, they made `pоol: 4` an "unknown key 'pоol' … did
/// you mean 'pool'?" that the writer could not see the difference in, and `pool:` + U+00A0 a YAML
/// error on the next line (QA 61). The note names each by its code point and Unicode name.
enum LookAlikes {
    /// A note for the `line` an error points at, nil when it holds none of these. Invisible
    /// characters and odd spaces are named anywhere on the line; look-alike letters only in the
    /// word at `column` (a description may be written in Russian).
    static func note(line: String, column: Int, place: String = "this line") -> String? {
        let scalars = Array(line.unicodeScalars)
        var found: [String] = []
        for (index, scalar) in scalars.enumerated() where isInvisible(scalar) || isOddSpace(scalar) {
            found.append("\(named(scalar)) at column \(index + 1)")
        }
        let start = max(0, column - 1)
        if start < scalars.count {
            let word = scalars[start...].prefix { !$0.properties.isWhitespace && !":,[]{}#\"'".unicodeScalars.contains($0) }
            for (offset, scalar) in word.enumerated() where isLookAlike(scalar) {
                found.append("\(named(scalar)) at column \(start + offset + 1)")
            }
        }
        guard !found.isEmpty else { return nil }
        let shown = found.count > 3 ? found.prefix(3).joined(separator: ", ") + " and \(found.count - 3) more" : found.joined(separator: ", ")
        let spaces = scalars.contains(where: isOddSpace) ? " (a space as U+0020)" : ""
        return "hidden in \(place): \(shown); retype \(found.count == 1 ? "it" : "them") in plain ASCII\(spaces)"
    }

    /// The note for the first of `numbers` (1-based lines of `source`) that has an invisible
    /// character or an odd space. A YAML error can be reported a line after its cause: `pool:` +
    /// U+00A0 + `4` is one plain value, and the error is at the next line's key.
    static func note(lines numbers: [Int], of source: String) -> String? {
        let lines = ScenarioErrors.lines(of: source)
        for number in numbers where number >= 1 && number <= lines.count {
            if let note = note(line: lines[number - 1], column: Int.max, place: "line \(number)") { return note }
        }
        return nil
    }

    /// `U+200B ZERO WIDTH SPACE`.
    static func named(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16, uppercase: true)
        let code = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        return scalar.properties.name.map { "\(code) \($0)" } ?? code
    }

    /// Format characters (U+200B–U+200D, U+2060, U+FEFF, the soft hyphen U+00AD): no glyph.
    /// Bidirectional controls are shown already (``ScenarioErrors/picturingControls(_:)``).
    static func isInvisible(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.generalCategory == .format && !ScenarioErrors.isHidden(scalar)
    }

    /// A space separator that is not U+0020 (no-break, en, em, thin, ideographic, …).
    static func isOddSpace(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.generalCategory == .spaceSeparator && scalar != " "
    }

    /// Greek and Cyrillic letters, and fullwidth ASCII (`：` typed with an input method): in a
    /// key or a word netsim knows, each is a look-alike of an ASCII character.
    static func isLookAlike(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x0370...0x04FF: scalar.properties.isAlphabetic
        case 0xFF01...0xFF5E: true
        default: false
        }
    }
}
