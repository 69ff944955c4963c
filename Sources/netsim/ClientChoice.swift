import ArgumentParser
import Foundation
import NetsimCore
import NetsimRunner

/// One client a run (or a matrix column) uses, as `--client`, `--exec` and `--exec-dir` chose it.
struct ClientChoice: Equatable {
    /// The driver given to the runner; nil: the scenario's own (or exec, with `exec` set).
    var driver: String? = nil
    /// The user's own exec client, for the `exec` column (`--exec`) or its own (`exec:NAME=…`).
    var exec: ExecClient? = nil

    /// The matrix column and the name in a run's title: the driver, the exec client's name,
    /// `exec` for `--exec` alone, `client` for the scenario's own.
    var column: String { exec?.name ?? driver ?? (exec != nil ? "exec" : "client") }

    /// The options that choose this client again, as words: `--client naive`, `--client
    /// exec:NAME=COMMAND`, `--exec COMMAND` (with `--exec-dir`); none for the scenario's own.
    var arguments: [String] {
        var words: [String] = []
        if let exec {
            let command = ShellQuoting.line(exec.command)
            words = exec.name.map { ["--client", "exec:\($0)=\(command)"] } ?? ["--exec", command]
            if let directory = exec.directory { words += ["--exec-dir", directory] }
        } else if let driver {
            words = ["--client", driver]
        }
        return words
    }

    /// Reads `--client`: built-in drivers and `exec:NAME=COMMAND` items, comma-separated, `all`
    /// for every built-in driver. An `exec:` item's command runs to the next comma that starts
    /// another item (a driver name, `all`, `exec:`), so a command may itself contain commas.
    /// `--exec COMMAND` (with `--exec-dir`) is what the plain `exec` driver runs; without
    /// `--client` it is the only client. Throws a `ValidationError` naming the bad item.
    /// `--exec-dir` names a folder: one that is not failed once the run (or check) had started,
    /// as `cannot run /usr/bin/env` (the spawn's chdir failed).
    static func checkFolder(_ execDirectory: String) throws {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: execDirectory, isDirectory: &isFolder), isFolder.boolValue else {
            throw ValidationError("--exec-dir \(execDirectory): there is no such folder; give the folder the client's command runs in")
        }
    }

    static func parse(client: String?, exec: String?, execDirectory: String?) throws -> [ClientChoice] {
        let own = try exec.map { ExecClient(command: try split($0, flag: "--exec"), directory: execDirectory) }
        if execDirectory != nil, exec == nil, !(client ?? "").contains("exec:") {
            throw ValidationError("--exec-dir needs --exec (or an exec:NAME=COMMAND client)")
        }
        if let execDirectory { try checkFolder(execDirectory) }
        guard let client else { return [ClientChoice(driver: nil, exec: own)] }
        var choices: [ClientChoice] = []
        func add(_ choice: ClientChoice) {
            if !choices.contains(where: { $0.column == choice.column }) { choices.append(choice) }
        }
        for item in try items(client) {
            if item == "all" {
                DriverFactory.available.forEach { add(ClientChoice(driver: $0, exec: $0 == "exec" ? own : nil)) }
            } else if item.hasPrefix("exec:") {
                let choice = try custom(String(item.dropFirst(5)), directory: execDirectory)
                // A column is one client: a second command under the same name was dropped unsaid.
                if let earlier = choices.first(where: { $0.column == choice.column }), earlier.exec?.command != choice.exec?.command {
                    throw ValidationError("--client \(item): the name '\(choice.column)' is given to two commands; give each client its own name (it names the matrix column)")
                }
                add(choice)
            } else if DriverFactory.names.contains(item) {
                add(ClientChoice(driver: item, exec: item == "exec" ? own : nil))
            } else {
                throw ValidationError("--client \(ShellQuoting.quoted(client)): '\(item)' is not a driver; use one of \(DriverFactory.names.joined(separator: ", ")), all, or exec:NAME=COMMAND, several comma-separated (e.g. --client all,exec:my-fetch='node fetch.mjs')")
            }
        }
        if choices.isEmpty { throw ValidationError("--client needs a driver") }
        // QA 47: `--client naive --exec '…'` ran naive alone, the --exec client never started.
        if let exec, !choices.contains(where: { $0.driver == "exec" && $0.exec == own }) {
            // Each part as it would be typed again (QA 49: quotes inside were not escaped).
            let list = client.trimmingCharacters(in: .whitespaces)
            throw ValidationError("--exec \(ShellQuoting.quoted(exec)) runs as the exec column, which --client \(ShellQuoting.quoted(client)) does not name; add exec to the list (--client \(ShellQuoting.quoted(list + ",exec"))), or give it a column of its own as exec:NAME=COMMAND")
        }
        return choices
    }

    /// `NAME=COMMAND` of an `exec:` item.
    private static func custom(_ text: String, directory: String?) throws -> ClientChoice {
        guard let equals = text.firstIndex(of: "=") else {
            throw ValidationError("--client exec:\(text): write exec:NAME=COMMAND, e.g. exec:my-fetch='node fetch.mjs'")
        }
        let name = String(text[..<equals]).trimmingCharacters(in: .whitespaces)
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
        guard !name.isEmpty, name.allSatisfy(allowed.contains) else {
            throw ValidationError("--client exec:\(text): the NAME before '=' must be letters, digits, '.', '_' or '-' (it names the matrix column)")
        }
        guard !DriverFactory.names.contains(name), name != "all", name != "client" else {
            throw ValidationError("--client exec:\(text): '\(name)' is a built-in driver's column; give your client another name")
        }
        let command = try split(String(text[text.index(after: equals)...]), flag: "--client exec:\(name)")
        return ClientChoice(driver: "exec", exec: ExecClient(name: name, command: command, directory: directory))
    }

    /// The items of a `--client` list: split at commas that start a new item. An empty item
    /// (`naive,,curl`, `naive,`, `exec:x=cmd,`) is refused, not skipped nor taken into an exec
    /// command: it is most often a variable that was not set (`--client naive,$CLIENT`), and the
    /// run went on without that client, unsaid (QA 50, 51). Items are counted as the user sees
    /// them, an exec command's own commas inside its item.
    static func items(_ list: String) throws -> [String] {
        var items: [String] = []
        for part in list.split(separator: ",", omittingEmptySubsequences: false) {
            let trimmed = part.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty {
                let inCommand = items.last?.hasPrefix("exec:") == true ? " (after an exec: item, a comma followed by another or by the end leaves an empty item; a command's own commas need something after them)" : ""
                throw ValidationError("--client \(ShellQuoting.quoted(list)): item \(items.count + 1) is empty (a variable that was not set?)\(inCommand); give clients separated by single commas, e.g. --client naive,curl")
            }
            let startsItem = trimmed == "all" || trimmed.hasPrefix("exec:") || DriverFactory.names.contains(trimmed)
            if !startsItem, let last = items.last, last.hasPrefix("exec:") {
                items[items.count - 1] += "," + part
            } else {
                items.append(trimmed)
            }
        }
        return items
    }

    private static func split(_ line: String, flag: String) throws -> [String] {
        do {
            return try ExecClient.split(line)
        } catch {
            throw ValidationError("\(flag): \(error)")
        }
    }
}
