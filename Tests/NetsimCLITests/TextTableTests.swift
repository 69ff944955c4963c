import NetsimFaults
import Testing
@testable import netsim

/// Tables on a terminal fit its width (QA 63: `netsim faults` was 269 columns, every row broken
/// mid-word by the terminal); into a pipe, one line per row.
@Suite("text tables")
struct TextTableTests {
    static func words(_ text: String) -> String {
        text.filter { !$0.isWhitespace && $0 != "-" }
    }

    @Test func withoutAWidthEachRowIsOneLine() {
        let table = renderTable(header: FaultCatalog.columns, rows: FaultCatalog.rows)
        #expect(table.split(separator: "\n").count == FaultCatalog.rows.count + 2)
    }

    @Test(arguments: [80, 110, 160])
    func theFaultsTableFitsATerminalAndLosesNoWord(width: Int) {
        let table = renderTable(header: FaultCatalog.columns, rows: FaultCatalog.rows, width: width)
        let lines = table.split(separator: "\n")
        #expect(lines.allSatisfy { $0.count <= width }, "\(lines.filter { $0.count > width })")
        // Every cell's text is there, in order, row after row.
        let flat = renderTable(header: FaultCatalog.columns, rows: FaultCatalog.rows)
        #expect(Self.words(table).count == Self.words(flat).count)
        for row in FaultCatalog.rows {
            #expect(table.contains(String(row[0].prefix(6))), "\(row[0])")
        }
    }

    @Test func wordsBreakAtSpacesOrAfterACommaOrABar() {
        #expect(TableFitting.wrap("portal[=redirect|page][,tls=reset|close]", to: 20) == ["portal[=redirect|", "page][,tls=reset|", "close]"])
        #expect(TableFitting.wrap("connect fails with ECONNREFUSED", to: 16) == ["connect fails", "with", "ECONNREFUSED"])
        #expect(TableFitting.wrap("short", to: 20) == ["short"])
        #expect(TableFitting.wrap("abcdefghij", to: 4) == ["abcd", "efgh", "ij"])
        #expect(TableFitting.longestWord("a,bb|ccc dddd") == 4)
    }
}
