import Yams
import NetsimCore

extension ClientSpec {
    /// The drivers a scenario may name: `exec` runs a program (docs/drivers.md); the others run in-process.
    public static let knownDrivers = ["exec", "urlsession", "async-http-client", "naive", "resilient"]
}

extension ScenarioParser {
    /// `text` split into words as a `command:` string is (a POSIX shell's words, no expansion);
    /// nil for an unterminated quote or a trailing backslash. `--exec` splits with it too.
    public static func shellWords(_ text: String) -> [String]? { Validator.shellWords(text) }
}

extension Validator {
    static let clientKeys = ["driver", "command", "timeout", "connect_timeout", "pool", "retries", "settings"]

    func client(_ entry: Entry) -> ClientSpec? {
        guard let map = mapping(entry) else { return nil }
        let errorsBefore = errorCount
        rejectUnknownKeys(map, allowed: Self.clientKeys)
        let driver = require("driver", in: map, hint: "known drivers: \(ClientSpec.knownDrivers.joined(separator: ", "))").flatMap { e in
            choice(e, what: "driver", options: ClientSpec.knownDrivers.map { ($0, $0) })
        }
        var spec = ClientSpec(driver: driver ?? "exec", location: entry.keyLocation)
        if let e = map["command"] {
            if let driver, driver != "exec" {
                error(e.keyLocation, "'command' is only for the exec driver; '\(driver)' runs inside netsim",
                      hint: "remove 'command', or use 'driver: exec' to run a program")
            } else if let command = command(e) {
                spec.command = command
            }
        } else if driver == "exec" {
            error(map.location, "the exec driver needs 'command': the program to run and its arguments",
                  hint: "for example: command: [python3, Fixtures/clients/urllib3_client.py]")
        }
        if let e = map["timeout"] { spec.timeout = positiveDuration(e, hint: "leave 'timeout' out to keep the client's own") }
        if let e = map["connect_timeout"] {
            spec.connectTimeout = positiveDuration(e, hint: "leave 'connect_timeout' out to keep the client's own")
        }
        if let e = map["pool"] {
            spec.pool = integer(e, range: 1...Int.max, expected: "a number of connections, at least 1")
        }
        if let e = map["retries"] {
            spec.retries = integer(e, range: 0...Int.max, expected: "a number of retries, 0 or more")
        }
        // Read once: read again for the built-in drivers' check, a duplicate key was reported twice (QA 61).
        if let e = map["settings"], let settings = mapping(e), let pairs = stringPairs(settings, what: "setting") {
            spec.settings = Dictionary(pairs.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
            if let driver, driver != "exec" { builtinSettings(settings, driver: driver) }
        }
        return errorCount == errorsBefore ? spec : nil
    }

    /// The `settings` netsim's own drivers read, and what each takes (docs/drivers.md).
    static let builtinSettingKinds: [String: [String]?] = [
        "backoff": nil, "backoff_cap": nil, "retry_after_cap": nil, "idle_timeout": nil,  // durations
        "retry_connect": ["true", "false"], "cache": ["protocol", "off", "none", "false"],
    ]

    /// For a scenario that names one of netsim's own drivers: a value its drivers could not read
    /// was dropped without a word (`idle_timeout: 5`, no unit), and so was a misspelt key
    /// (`backof`, one letter from one they read). Other keys stay allowed: a scenario may carry
    /// another client's settings.
    private func builtinSettings(_ settings: Mapping, driver: String) {
        let known = Self.builtinSettingKinds.keys.sorted()
        for item in settings.entries {
            guard let kind = Self.builtinSettingKinds[item.key] else {
                // One letter off only: `backof` is a typo, `backoff_max` (urllib3's) is not.
                if let near = known.first(where: { editDistance(item.key, $0) == 1 }) {
                    error(item.keyLocation, "unknown setting '\(item.key)' for the \(driver) driver",
                          hint: "did you mean '\(near)'? netsim's drivers read \(known.joined(separator: ", ")) (docs/drivers.md)")
                }
                continue
            }
            if let words = kind {
                _ = choice(item, what: "'\(item.key)' value", options: words.map { ($0, $0) }, normalize: { $0.lowercased() })
            } else {
                _ = duration(item)
            }
        }
    }

    /// A duration greater than zero (timeouts).
    func positiveDuration(_ entry: Entry, hint: String) -> Duration? {
        guard let value = duration(entry) else { return nil }
        guard value > .zero else {
            error(entry.valueLocation, "'\(entry.key)' must be longer than 0", hint: hint)
            return nil
        }
        return value
    }

    /// A program and its arguments: a list of words, or one string split like a shell would
    /// (spaces separate words; quotes and backslashes keep them together).
    private func command(_ entry: Entry) -> [String]? {
        let words: [String]
        switch entry.value {
        case .sequence(let items):
            var list: [String] = []
            for item in items {
                guard case .scalar(let scalar) = item, !item.isNull else {
                    error(location(item), "each word of 'command' must be text, found \(item.foundDescription)")
                    return nil
                }
                list.append(scalar.string)
            }
            words = list
        case .scalar(let scalar) where !entry.value.isNull:
            guard let split = Self.shellWords(scalar.string) else {
                error(entry.valueLocation, "'command' has an unterminated quote", hint: "close the quote, or write the command as a list: [program, arg1, arg2]")
                return nil
            }
            words = split
        default:
            error(entry.valueLocation, "'command' must be a list of words or a string, found \(entry.value.foundDescription)",
                  hint: "for example: command: [python3, client.py]")
            return nil
        }
        guard let program = words.first, !program.isEmpty else {
            error(entry.valueLocation, "'command' is empty; name the program to run")
            return nil
        }
        return words
    }

    static func shellWords(_ text: String) -> [String]? {
        var words: [String] = []
        var current = ""
        var inWord = false
        var quote: Character?
        var escaped = false
        for c in text {
            if escaped {
                current.append(c)
                escaped = false
                continue
            }
            if let q = quote {
                if c == q {
                    quote = nil
                } else if c == "\\", q == "\"" {
                    escaped = true
                } else {
                    current.append(c)
                }
                continue
            }
            switch c {
            case "\"", "'":
                quote = c
                inWord = true
            case "\\":
                escaped = true
                inWord = true
            case _ where c.isWhitespace:
                if inWord { words.append(current) }
                current = ""
                inWord = false
            default:
                current.append(c)
                inWord = true
            }
        }
        guard quote == nil, !escaped else { return nil }
        if inWord { words.append(current) }
        return words
    }
}
