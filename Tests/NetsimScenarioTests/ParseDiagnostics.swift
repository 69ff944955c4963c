@testable import NetsimScenario

/// The diagnostics of parsing `source` as `file` (none when it parses).
func parseDiagnostics(_ source: String, file: String) -> [Diagnostic] {
    do {
        _ = try ScenarioParser.parse(source: source, file: file)
        return []
    } catch {
        return error.diagnostics
    }
}
