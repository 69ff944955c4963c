import NetsimCore

extension ClientSpec {
    /// What netsim's own drivers could not read in ``settings``: a value of the wrong kind
    /// (`backoff: 5`, no unit), or a key one letter from one they read (`backof`).
    ///
    /// The scenario check does this for a scenario that names one of those drivers. A scenario
    /// written for `exec` and run with `--client resilient` reached the driver unchecked, and a
    /// setting it could not read was silently its default; the runner asks this first.
    public func unreadableBuiltinSettings() -> [String] {
        let known = Validator.builtinSettingKinds.keys.sorted()
        return settings.keys.sorted().compactMap { key in
            let value = settings[key] ?? ""
            guard let kind = Validator.builtinSettingKinds[key] else {
                return known.first { editDistance(key, $0) == 1 }.map { "unknown setting '\(key)': did you mean '\($0)'?" }
            }
            if let words = kind {
                return words.contains(value.lowercased()) ? nil : "'\(key): \(value)' is not one of \(words.joined(separator: ", "))"
            }
            do { _ = try Duration(parsing: value) } catch { return "'\(key): \(value)': \(error)" }
            return nil
        }
    }
}
