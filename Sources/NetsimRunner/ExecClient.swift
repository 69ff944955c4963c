import Foundation

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

    /// Splits a command line as a POSIX shell does for words: blanks separate, `'…'` keeps
    /// everything literally, `"…"` keeps blanks (with `\"` and `\\` escapes), `\x` outside
    /// quotes is `x`. No expansion of any kind — netsim runs the program itself, no shell.
    /// - Throws: ``RunnerError/invalid(_:)`` for an unterminated quote or an empty command.
    public static func split(_ line: String) throws -> [String] {
        var words: [String] = []
        var word = ""
        var inWord = false
        var quote: Character?
        var escaped = false
        for character in line {
            if escaped {
                word.append(character)
                escaped = false
                continue
            }
            switch (quote, character) {
            case ("'", "'"), ("\"", "\""):
                quote = nil
            case ("'", _):
                word.append(character)
            case ("\"", "\\"):
                escaped = true
            case ("\"", _):
                word.append(character)
            case (nil, "'"), (nil, "\""):
                quote = character
                inWord = true
            case (nil, "\\"):
                escaped = true
                inWord = true
            case (nil, " "), (nil, "\t"), (nil, "\n"):
                if inWord { words.append(word) }
                word = ""
                inWord = false
            default:
                word.append(character)
                inWord = true
            }
        }
        if quote != nil || escaped {
            throw RunnerError.invalid("the command \(line) has an unterminated quote or a trailing backslash")
        }
        if inWord { words.append(word) }
        if words.isEmpty { throw RunnerError.invalid("the exec command is empty") }
        return words
    }
}
