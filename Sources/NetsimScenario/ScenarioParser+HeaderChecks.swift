import Yams

extension Validator {
    static let headerCheckExample = "for example: headers: { Content-Type: { contains: json }, Set-Cookie: { present: false } }"

    /// `headers:` of a request expectation: header names (any case) to their value as text, or
    /// `{ equals: … }`, `{ contains: … }`, `{ present: true|false }`.
    func headerChecks(_ entry: Entry) -> [HeaderCheck]? {
        guard case .mapping = entry.value else {
            error(entry.valueLocation, "'headers' must map header names to what each must be, found \(entry.value.foundDescription)",
                  hint: Self.headerCheckExample)
            return nil
        }
        guard let map = mapping(entry, place: "'headers'") else { return nil }
        if map.entries.isEmpty {
            error(map.location, "'headers' names no header", hint: Self.headerCheckExample)
            return nil
        }
        var checks: [HeaderCheck] = []
        var seen: [String: SourceLocation] = [:]
        var ok = true
        for header in map.entries {
            if !Self.isHeaderName(header.key) {
                error(header.keyLocation, "'\(header.key)' is not a valid header name", hint: Self.headerNameHint)
                ok = false
                continue
            }
            // Names are case-insensitive: `ETag` and `etag` are one header.
            if let first = seen[header.key.lowercased()] {
                error(header.keyLocation, "header '\(header.key)' is checked twice; it was already given at line \(first.line) (names ignore case)",
                      hint: "give one check per header; use two expectations for two conditions")
                ok = false
                continue
            }
            seen[header.key.lowercased()] = header.keyLocation
            guard let expectation = headerExpectation(header) else { ok = false; continue }
            checks.append(HeaderCheck(name: header.key, expectation))
        }
        return ok ? checks : nil
    }

    private func headerExpectation(_ header: Entry) -> HeaderCheck.Expectation? {
        let forms = "its value as text, or one of { equals: … }, { contains: … }, { present: true|false }"
        switch header.value {
        case .scalar where !header.value.isNull:
            return headerText(header).map { .equals($0) }
        case .mapping:
            guard let map = mapping(header, place: "header '\(header.key)'"),
                  let form = oneForm(of: map, named: "header '\(header.key)'", forms: ["equals", "contains", "present"],
                                     hint: Self.headerCheckExample) else { return nil }
            switch form.key {
            case "equals": return headerText(form).map { .equals($0) }
            case "contains": return headerText(form, allowEmpty: false).map { .contains($0) }
            default: return boolean(form).map { .present($0) }
            }
        default:
            error(header.valueLocation, "header '\(header.key)' must be \(forms), found \(header.value.foundDescription)",
                  hint: header.value.isNull ? "write { present: true } for any value, or quote the text: \"null\"" : Self.headerCheckExample)
            return nil
        }
    }

    /// A value to look for: one line, as a header's value is (a line break could never match).
    private func headerText(_ entry: Entry, allowEmpty: Bool = true) -> String? {
        guard let value = text(entry, allowEmpty: allowEmpty) else { return nil }
        if value.contains("\n") || value.contains("\r") {
            error(entry.valueLocation, "the value for '\(entry.key)' contains a line break; a header's value is one line",
                  hint: "check part of it with { contains: … }")
            return nil
        }
        if let bad = Self.forbiddenInFieldValue(value) {
            error(entry.valueLocation, "the value for '\(entry.key)' contains the control character U+\(String(format: "%04X", bad.value)), which no header's value holds",
                  hint: "a header's value is visible characters, spaces and tabs (RFC 9110, 5.5)")
            return nil
        }
        return value
    }
}
