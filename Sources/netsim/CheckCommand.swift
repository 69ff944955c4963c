import NetsimCore
import ArgumentParser
import Foundation
import NetsimScenario

/// `netsim check PATH…`: validates scenario files (named, or found in folders) without running anything.
struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Validate scenario files without running them.",
        discussion: """
            Prints 'FILE: ok' for each valid file and every error of the others, each with its \
            line and column, the offending line and a hint. Exits 0 when every file is valid, \
            2 when any is not. The format is described in docs/scenario-format.md.

            Examples:
              netsim check Scenarios/*.scn
              netsim check Scenarios/
            """
    )

    @Argument(help: ArgumentHelp("Scenario files to check, or folders: every .scn in them (recursively), as `netsim test` finds them.", valueName: "path"))
    var files: [String]

    /// What `check` prints: `ok` lines for standard output, diagnostics for standard error.
    struct Report: Equatable {
        var output = ""
        var errors = ""
        var allValid = true
    }

    /// Checks files and folders as `netsim run` and `netsim test` find them (each path component
    /// matched case-insensitively when the exact spelling does not exist). A missing file, or a
    /// folder with no scenario in it, is reported with the others' errors rather than stopping
    /// the check.
    static func check(paths: [String]) -> Report {
        var files: [String] = []
        var empty = Report()
        for path in paths {
            var isDirectory: ObjCBool = false
            let resolved = ScenarioFiles.resolve(path)
            if FileManager.default.fileExists(atPath: resolved, isDirectory: &isDirectory), isDirectory.boolValue {
                let found = ScenarioFiles.scenarios(inFolder: resolved)
                if found.isEmpty {
                    empty.errors += "\(path): error: \(ScenarioFiles.noScenarios)\n"
                    empty.allValid = false
                }
                files += found
            } else {
                // As `run` finds it: `scenarios/x.scn` is `Scenarios/x.scn`.
                files.append(resolved)
            }
        }
        var report = check(files)
        report.errors += empty.errors
        report.allValid = report.allValid && empty.allValid
        return report
    }

    static func check(_ files: [String]) -> Report {
        var report = Report()
        for file in files {
            do {
                _ = try ScenarioParser.parseToRun(file: file)
                report.output += "\(file): ok\n"
            } catch {
                report.errors += error.rendered()
                report.allValid = false
            }
        }
        return report
    }

    func run() throws {
        let report = Self.check(paths: files)
        if !report.output.isEmpty {
            StandardStream.output.write(report.output)
        }
        if !report.errors.isEmpty {
            StandardStream.error.write(report.errors)
        }
        if !report.allValid { throw ExitCode(2) }
    }
}
