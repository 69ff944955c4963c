/// Words as a person would type them again into a POSIX shell: a word of plain characters as
/// it is, any other in single quotes (a `'` inside as `'\''`). For the commands netsim prints
/// back (a matrix file's "regenerate with" line, a baseline's update command, a hint's
/// command), which a reader copies and pastes (QA 47: `--client exec:my-fetch=node fetch.mjs`
/// came out unquoted).
public enum ShellQuoting {
    private static let plain = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./,:=@%+")

    /// `word` as a shell would take it back: as it is when plain, else single-quoted.
    public static func quoted(_ word: String) -> String {
        !word.isEmpty && word.allSatisfy(plain.contains) ? word : "'" + word.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
    }

    /// `words` as one command line.
    public static func line(_ words: [String]) -> String { words.map(quoted).joined(separator: " ") }
}
