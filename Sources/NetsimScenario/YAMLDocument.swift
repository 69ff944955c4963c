import Yams

/// A composed YAML document, or the syntax error that stopped Yams.
///
/// Yams refuses a mapping with a repeated key outright (one error, at the *first* occurrence,
/// and nothing else parsed). To report duplicates like every other mistake — at the repeated
/// key, alongside the file's other errors — the first occurrence is renamed in a copy of the
/// source to a placeholder of the same length (so every position stays put) and the copy is
/// composed again. The validator maps placeholders back to their names and reports the later
/// occurrences itself.
struct YAMLDocument {
    /// nil for an empty document.
    var root: Node?
    /// Placeholder key → the key as written.
    var renamedKeys: [String: String]

    enum Failure: Error {
        /// A syntax error: message, hint, 1-based line and column.
        case syntax(message: String, hint: String?, line: Int, column: Int)
    }

    /// How much text the duplicate-key renaming may compose in all: each duplicate composes the
    /// whole file again, so a big file with many cost their product (QA 61: 900 in 219 KB took
    /// 35 s); about a second at most now. A hand-written scenario of a few KB gets hundreds
    /// reported each.
    static let renamingBudget = 2 << 20

    static func compose(_ source: String) throws(Failure) -> YAMLDocument {
        var text = source
        var renamed: [String: String] = [:]
        let budget = min(1000, Self.renamingBudget / max(1, source.utf8.count))
        while true {
            do {
                let root = try Yams.compose(yaml: text)
                return YAMLDocument(root: root, renamedKeys: renamed)
            } catch let error as YamlError {
                if case .duplicatedKeysInMapping(let duplicates, let context) = error {
                    if renamed.count < budget,
                       let (placeholder, original) = rename(in: &text, at: context.mark, keys: duplicates, counter: renamed.count) {
                        renamed[placeholder] = original
                        continue
                    }
                    if renamed.count >= budget {
                        // Past the budget: one error, at the first occurrence of what is left, saying so.
                        let names = duplicates.map { "'\($0)'" }.joined(separator: ", ")
                        throw .syntax(message: "duplicate key \(names) in one mapping, and more: \(renamed.count) repeated keys found before netsim stopped looking",
                                      hint: "give each key once (a generated file? check its generator)",
                                      line: max(1, context.mark.line), column: max(1, context.mark.column))
                    }
                }
                throw failure(from: error, source: text).pointingAtTabs(in: text).naming(hiddenCharactersIn: text)
            } catch {
                throw .syntax(message: "cannot read the YAML: \(error)", hint: nil, line: 1, column: 1)
            }
        }
    }

    /// Replaces the key written at `mark` by a same-length placeholder; nil when it cannot be found there.
    private static func rename(in text: inout String, at mark: Mark, keys: [String], counter: Int) -> (String, String)? {
        var lines = text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).map { Array($0) }
        let lineIndex = mark.line - 1
        guard lineIndex >= 0, lineIndex < lines.count else { return nil }
        let line = lines[lineIndex]
        var start = mark.column - 1
        guard start >= 0, start < line.count else { return nil }
        if line[start] == "\"" || line[start] == "'" { start += 1 }
        for key in keys {
            let scalars = Array(key.unicodeScalars)
            guard !scalars.isEmpty, start + scalars.count <= line.count,
                  Array(line[start..<(start + scalars.count)]) == scalars else { continue }
            guard let marker = Unicode.Scalar(0xE000 + UInt32(counter % 6000)) else { return nil }
            let placeholder = Array(repeating: marker, count: scalars.count)
            lines[lineIndex].replaceSubrange(start..<(start + scalars.count), with: placeholder)
            var view = String.UnicodeScalarView()
            for (i, l) in lines.enumerated() {
                if i > 0 { view.append("\n") }
                view.append(contentsOf: l)
            }
            text = String(view)
            var placeholderView = String.UnicodeScalarView()
            placeholderView.append(contentsOf: placeholder)
            return (String(placeholderView), key)
        }
        return nil
    }

    private static func failure(from error: YamlError, source: String) -> Failure {
        switch error {
        case .scanner(let context, let problem, let mark, _),
             .parser(let context, let problem, let mark, _),
             .composer(let context, let problem, let mark, _):
            if let context, problem.hasPrefix("but ") {
                // "expected a single document in the stream" + "but found another document"
                return .syntax(
                    message: "invalid YAML: \(context.text), \(problem)", hint: hint(problem: problem, context: nil),
                    line: max(1, mark.line), column: max(1, mark.column))
            }
            if let context, problem.contains("end of stream") {
                // The end of the file is no place to look: point at what was left open.
                let hint = context.text.contains("quoted") ? "close the quote" : nil
                return .syntax(
                    message: "invalid YAML: \(problem) \(context.text)", hint: hint,
                    line: max(1, context.mark.line), column: max(1, context.mark.column))
            }
            if problem.hasPrefix("Maximum nesting level reached") {
                // libyaml's text names its own API; say what it means.
                return .syntax(
                    message: "invalid YAML: nested too deeply", hint: "a scenario needs a few levels; look for brackets opened and never closed",
                    line: max(1, mark.line), column: max(1, mark.column))
            }
            return .syntax(
                message: "invalid YAML: \(problem)",
                hint: quotingHint(problem: problem, inFlow: context?.text.contains("flow") == true, at: context?.mark ?? mark, mark: mark, in: source)
                    ?? hint(problem: problem, context: context),
                line: max(1, mark.line), column: max(1, mark.column))
        case .reader(let problem, let offset, _, let yaml):
            // Yams gives the offset in Characters; lines and columns count scalars, as libyaml's
            // marks and the quoted line do (QA 61: counted in Characters, "\r\n" is one and never
            // "\n", so a CRLF file's error was at 1:144; after 👍🏽 the column was short by one).
            let (line, column) = offset.map { position(of: yaml.index(yaml.startIndex, offsetBy: $0, limitedBy: yaml.endIndex) ?? yaml.endIndex, in: yaml) } ?? (1, 1)
            return .syntax(message: "invalid YAML: \(problem)", hint: nil, line: line, column: column)
        case .duplicatedKeysInMapping(let duplicates, let context):
            let names = duplicates.map { "'\($0)'" }.joined(separator: ", ")
            return .syntax(
                message: "duplicate key \(names) in one mapping", hint: "give each key once",
                line: max(1, context.mark.line), column: max(1, context.mark.column))
        default:
            return .syntax(message: "invalid YAML: \(error)", hint: nil, line: 1, column: 1)
        }
    }

    /// The 1-based line and scalar column of `index`: lines end at "\n", "\r\n" or a lone "\r",
    /// as YAML and ``ScenarioErrors/lines(of:)`` count them.
    static func position(of index: String.Index, in text: String) -> (line: Int, column: Int) {
        var line = 1
        var column = 1
        var afterCR = false
        for scalar in text.unicodeScalars[..<index] {
            if scalar == "\n", afterCR {
                afterCR = false
                continue  // the second half of "\r\n"
            }
            afterCR = scalar == "\r"
            if scalar == "\n" || scalar == "\r" {
                line += 1
                column = 1
            } else {
                column += 1
            }
        }
        return (line, column)
    }

    static let tabHint = "indent with spaces; YAML does not allow tabs for indentation"

    /// A plain value YAML reads as something else: one starting with `[` or `{` (a flow list or
    /// mapping: `address: [::1]:8080`), or with a character YAML reserves (`%`, `@`, a backtick).
    /// The fix is quoting it, which libyaml's own hint ("while parsing a flow node that began at
    /// …") did not say (QA 61). nil when the error is something else.
    static func quotingHint(problem: String, inFlow: Bool, at start: Mark, mark: Mark, in source: String) -> String? {
        let lines = ScenarioErrors.lines(of: source)
        func character(_ at: Mark) -> Unicode.Scalar? {
            guard at.line >= 1, at.line <= lines.count else { return nil }
            let scalars = Array(lines[at.line - 1].unicodeScalars)
            return at.column >= 1 && at.column <= scalars.count ? scalars[at.column - 1] : nil
        }
        if problem.contains("cannot start any token"), let first = character(mark), "%@`".unicodeScalars.contains(first) {
            return "YAML reserves '\(first)' at the start of a plain value: quote it (\"\(first)…\")"
        }
        // The value on the line where the flow began: after `key: ` or `- `.
        guard inFlow, start.line >= 1, start.line <= lines.count else { return nil }
        var value = Substring(lines[start.line - 1]).drop { $0 == " " }
        if value.hasPrefix("- ") { value = value.dropFirst(2).drop { $0 == " " } }
        if let colon = value.range(of: ": ") { value = value[colon.upperBound...].drop { $0 == " " } }
        guard let first = value.first, first == "[" || first == "{" else { return nil }
        // Text after the closing bracket (`]:8080`): a value, not a list left open.
        let text = value.trimmingCharacters(in: .whitespaces)
        guard let close = text.lastIndex(of: first == "[" ? "]" : "}"), text.index(after: close) < text.endIndex else { return nil }
        return "a value starting with '\(first)' is read as a YAML \(first == "[" ? "list" : "mapping"); if it is text, quote it: \"\(text)\""
    }

    private static func hint(problem: String, context: YamlError.Context?) -> String? {
        if problem.contains("tab") {
            return tabHint
        }
        if problem.contains("mapping values are not allowed") {
            return "check this line's indentation, and quote a value that contains ': '"
        }
        if problem.contains("found another document") {
            return "a scenario file holds one YAML document; remove the '---' separator"
        }
        if problem.contains("undefined alias") {
            return "define the anchor ('&name') before using it as an alias ('*name')"
        }
        guard let context else { return nil }
        return "\(context.text) that began at line \(context.mark.line), column \(context.mark.column)"
    }
}

extension YAMLDocument.Failure {
    /// The tab hint for an error inside a line's indentation that holds a tab. libyaml names
    /// the tab only after an indented sibling; a tab on the first line under a key gave "found
    /// character that cannot start any token" with a hint about scanning (QA 43).
    func pointingAtTabs(in source: String) -> YAMLDocument.Failure {
        guard case .syntax(let message, let hint, let line, let column) = self, hint != YAMLDocument.tabHint else { return self }
        let lines = ScenarioErrors.lines(of: source)  // "\r\n" too (QA 61: the hint was lost in CRLF files)
        guard line <= lines.count else { return self }
        let indentation = lines[line - 1].prefix { $0 == " " || $0 == "\t" }
        guard indentation.contains("\t"), column <= indentation.count + 1 else { return self }
        return .syntax(message: message, hint: YAMLDocument.tabHint, line: line, column: column)
    }
}

extension YAMLDocument.Failure {
    /// The hint for a syntax error on a line, or after one, that holds an invisible character or
    /// a space that is not U+0020 (``LookAlikes``): libyaml's own ("while scanning a simple key
    /// that began at line 34") did not say that `pool:` + U+00A0 + `4` was one value (QA 61).
    func naming(hiddenCharactersIn source: String) -> YAMLDocument.Failure {
        guard case .syntax(let message, _, let line, let column) = self,
              let note = LookAlikes.note(lines: [line, line - 1], of: source) else { return self }
        return .syntax(message: message, hint: note, line: line, column: column)
    }
}

extension Node {
    /// The node's 1-based position (1:1 when Yams gave none).
    var position: (line: Int, column: Int) {
        guard let mark else { return (1, 1) }
        return (max(1, mark.line), max(1, mark.column))
    }

    /// True for `key:` with nothing after it, `~` and `null`.
    var isNull: Bool {
        guard case .scalar(let scalar) = self, scalar.style == .plain || scalar.style == .any else { return false }
        return ["", "~", "null", "Null", "NULL"].contains(scalar.string)
    }

    /// "a mapping", "a list", "nothing", or the scalar as written.
    var foundDescription: String {
        switch self {
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        case .alias: return "an alias"
        case .scalar(let scalar):
            if isNull { return "nothing" }
            let firstLine = scalar.string.split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
            if firstLine.count > 40 || firstLine.count < scalar.string.count {
                return "'\(firstLine.prefix(40))…'"
            }
            return "'\(scalar.string)'"
        }
    }
}
