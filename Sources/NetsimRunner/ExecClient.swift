import Foundation
import NetsimScenario

/// A user's own exec client, given on the command line instead of a scenario's `client:` block:
/// `--exec 'node fetch.mjs'`, `--exec-dir`, or a matrix column `--client exec:NAME=COMMAND`
/// (docs/drivers.md, "Bring your own client"). It runs any scenario, whatever driver the
/// scenario names; the scenario's `timeout`, `connect_timeout`, `pool`, `retries` and
/// `settings` still reach it in `config`.
public struct ExecClient: Sendable, Equatable {
    /// The matrix column (`exec:NAME=…`), or nil for `--exec` (the `exec` column).
    public var name: String?
    /// The program and its arguments, already split.
    public var command: [String]
    /// The client's working directory, where relative paths in `command` are looked up first;
    /// nil: netsim's current directory.
    public var directory: String?

    public init(name: String? = nil, command: [String], directory: String? = nil) {
        self.name = name
        self.command = command
        self.directory = directory
    }

    /// Splits a command line as a scenario's `command:` string is split (a POSIX shell's words:
    /// blanks separate, quotes and backslashes group; no expansion — netsim runs the program
    /// itself, no shell).
    /// - Throws: ``RunnerError/invalid(_:)`` for an unterminated quote or an empty command.
    public static func split(_ line: String) throws -> [String] {
        guard let words = ScenarioParser.shellWords(line) else {
            throw RunnerError.invalid("the command \(line) has an unterminated quote or a trailing backslash")
        }
        if words.isEmpty { throw RunnerError.invalid("the exec command is empty") }
        return words
    }
}
