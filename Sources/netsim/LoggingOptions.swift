import ArgumentParser
import Foundation
import Logging

/// `--log-level` and `--log-format`: netsim's diagnostics (swift-log) on standard error, never on
/// standard output, so reports and `--events -` stay clean. The event log stays the record of a
/// run; these lines say what netsim itself did (listening, connects, requests served, errors).
struct LoggingOptions: ParsableArguments {
    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    @Option(help: ArgumentHelp("Diagnostics on standard error from this level up: trace, debug, info, notice, warning, error, critical. Default: warning", valueName: "level"), transform: Self.parseLevel)
    var logLevel: Logger.Level = .warning

    @Option(help: ArgumentHelp("Diagnostics as text lines, or as one JSON object per line (json). Default: text", valueName: "text|json"))
    var logFormat: Format = .text

    static func parseLevel(_ text: String) throws -> Logger.Level {
        guard let level = Logger.Level(rawValue: text.lowercased()) else {
            throw ValidationError("'\(text)' is not a log level; use one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return level
    }

    /// Installs the handler for the whole process; a command calls it first thing in `run()`
    /// (swift-log's bootstrap is once per process, and one command runs per process).
    func bootstrap() {
        let level = logLevel
        let format = logFormat
        StatusLines.json = format == .json
        LoggingSystem.bootstrap { label in
            var handler: any LogHandler = switch format {
            case .text: StreamLogHandler.standardError(label: label)
            case .json: JSONLogHandler(label: label)
            }
            handler.logLevel = level
            return handler
        }
    }
}
