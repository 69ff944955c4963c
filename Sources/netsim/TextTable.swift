import Foundation

/// A plain left-aligned text table. Given a `width` (a terminal's), the widest columns are
/// wrapped at word boundaries until the table fits (QA 63: `netsim faults` was 269 columns wide,
/// every row broken by the terminal mid-word); without one, one line per row, for grep and
/// files.
func renderTable(header: [String], rows: [[String]], width: Int? = nil) -> String {
    let all = [header] + rows
    var widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
    if let width { widths = TableFitting.fit(widths, into: width, cells: all) }
    func lines(_ cells: [String]) -> [String] {
        let wrapped = zip(cells, widths).map { TableFitting.wrap($0, to: $1) }
        let height = wrapped.map(\.count).max() ?? 1
        return (0..<height).map { row in
            zip(wrapped, widths).map { ($0.indices.contains(row) ? $0[row] : "").padding(toLength: $1, withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingTrailingSpaces()
        }
    }
    let rule = widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")
    return (lines(header) + [rule] + rows.flatMap(lines)).joined(separator: "\n")
}

/// The width to fit a table printed on standard output into: the terminal's, none when the
/// output is a pipe or a file.
func terminalTableWidth() -> Int? {
    isatty(STDOUT_FILENO) == 1 ? ProgressDisplay.terminalWidth() : nil
}

enum TableFitting {
    /// Column widths that fit `width` with two spaces between columns: the widest column is
    /// narrowed one character at a time, first never below its longest word, then (a narrow
    /// terminal) cutting words, never below 8, until the table fits or nothing can narrow.
    static func fit(_ natural: [Int], into width: Int, cells: [[String]]) -> [Int] {
        var widths = natural
        let gaps = 2 * max(0, widths.count - 1)
        let wordFloors = natural.indices.map { column in min(natural[column], max(8, cells.map { longestWord($0[column]) }.max() ?? 0)) }
        for floors in [wordFloors, natural.map { min($0, 8) }] {
            while widths.reduce(0, +) + gaps > width {
                guard let column = widths.indices.filter({ widths[$0] > floors[$0] }).max(by: { widths[$0] < widths[$1] }) else { break }
                widths[column] -= 1
            }
        }
        return widths
    }

    /// `text` in lines of at most `width` characters, broken at spaces, or after a `,` or `|`
    /// inside a word (`portal[=redirect|page][,tls=…]`); a piece longer than a line is cut.
    static func wrap(_ text: String, to width: Int) -> [String] {
        guard text.count > width, width > 0 else { return [text] }
        var lines: [String] = []
        var line = ""
        for (piece, separator) in pieces(text) {
            var piece = piece
            if !line.isEmpty, line.count + separator.count + piece.count > width {
                lines.append(line)
                line = ""
            }
            while piece.count > width {
                if !line.isEmpty { lines.append(line); line = "" }
                lines.append(String(piece.prefix(width)))
                piece = String(piece.dropFirst(width))
            }
            line = line.isEmpty ? piece : line + separator + piece
        }
        if !line.isEmpty { lines.append(line) }
        return lines
    }

    /// The pieces a line may break between, each with what joins it to the one before: a
    /// space, or nothing after a `,` or `|`.
    static func pieces(_ text: String) -> [(piece: String, separator: String)] {
        var result: [(piece: String, separator: String)] = []
        for word in text.split(separator: " ", omittingEmptySubsequences: false) {
            var separator = " "
            var piece = ""
            for character in word {
                piece.append(character)
                if character == "," || character == "|" {
                    result.append((piece, separator))
                    (piece, separator) = ("", "")
                }
            }
            if !piece.isEmpty || separator == " " { result.append((piece, separator)) }
        }
        return result
    }

    static func longestWord(_ text: String) -> Int {
        pieces(text).map(\.piece.count).max() ?? 0
    }
}

extension String {
    func trimmingTrailingSpaces() -> String {
        var s = self
        while s.last == " " { s.removeLast() }
        return s
    }
}
