/// The catalog as tables: `netsim faults` prints the text one, docs/faults.md holds the Markdown
/// one (a test keeps the page equal to it).
extension FaultCatalog {
    /// One row per fault: the form it is written in, its scope, where it can be injected, what a
    /// client sees, its toxic.
    public static var rows: [[String]] {
        all.map { fault in
            [fault.name + fault.syntax, fault.scope.rawValue, fault.paths.label, fault.summary, fault.toxic?.label ?? "none"]
        }
    }

    public static let columns = ["fault", "acts", "paths", "what the client sees", "Toxiproxy toxic"]

    /// The Markdown table of every fault.
    public static var markdownTable: String {
        let escape = { (cell: String) in cell.replacingOccurrences(of: "|", with: "\\|") }
        let lines = ["| " + columns.joined(separator: " | ") + " |", "|" + columns.map { _ in "---|" }.joined()]
            + rows.map { row in "| `" + escape(row[0]) + "` | " + row.dropFirst().map(escape).joined(separator: " | ") + " |" }
        return lines.joined(separator: "\n")
    }
}

extension FaultCatalog {
    /// Stands for ``allowedForms`` in golden error files, so they name the list instead of
    /// copying it (a new fault changes no golden file).
    public static let formsPlaceholder = "{FAULT_FORMS}"

    /// A golden text with the placeholder replaced by the current list.
    public static func expandingPlaceholder(in text: String) -> String {
        text.replacingOccurrences(of: formsPlaceholder, with: allowedForms)
    }
}
