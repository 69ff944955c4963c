import Yams
import NetsimCore

extension Validator {
    static let subjectKeys = ["request", "after", "server", "relay"]
    /// Keys any expectation may carry besides its subject and checks.
    static let expectationKeys = ["judges"]
    static let requestCheckKeys = ["status", "error", "within", "body", "headers", "connection", "requests", "message"]
    static let serverCheckKeys = ["count"]
    static let relayCheckKeys = ["new_connections", "attempts", "bytes", "requests", "responses"]
    static let errorWords = ["none", "any"] + ErrorKind.allCases.map(\.rawValue)

    /// `requestNames` nil: the timeline could not be read, so request subjects are not checked against it.
    /// `readable`: every expectation that could be read, even when another could not, for the
    /// checks across the file (a `server` check beside an `address` upstream), so one bad
    /// expectation does not hide their errors (QA 60).
    func expectations(_ entry: Entry, requestNames: [String: SourceLocation]?, readable: inout [Expectation]) -> [Expectation]? {
        guard let items = list(entry, of: "expectations") else { return nil }
        if items.isEmpty {
            error(entry.keyLocation, "'expect' is empty; add at least one expectation",
                  hint: "for example: - request: first with status: 200")
            return nil
        }
        var expectations: [Expectation] = []
        var ok = true
        for (index, item) in items.enumerated() {
            if let expectation = expectation(item, number: index + 1, requestNames: requestNames) {
                expectations.append(expectation)
            } else {
                ok = false
            }
        }
        readable = expectations
        return ok ? expectations : nil
    }

    private func expectation(_ node: Node, number: Int, requestNames: [String: SourceLocation]?) -> Expectation? {
        let place = "expectation \(number)"
        guard let map = mapping(node, what: place, place: place) else { return nil }
        let errorsBefore = errorCount
        let subjects = map.entries.filter { Self.subjectKeys.contains($0.key) }
        guard let subjectEntry = subjects.first else {
            let unknown = rejectUnknownKeys(
                map, allowed: Self.subjectKeys + Self.expectationKeys + Self.requestCheckKeys + Self.serverCheckKeys + Self.relayCheckKeys)
            if !unknown.contains(where: { closestMatch(to: $0.key, among: Self.subjectKeys) != nil }) {
                error(map.location, "\(place) has no subject; give it one of request, after, server or relay",
                      hint: "the subject says what the checks are about, e.g. '- request: warm' or '- after: 5s'")
            }
            return nil
        }
        for extra in subjects.dropFirst() {
            error(extra.keyLocation, "\(place) has two subjects, '\(subjectEntry.key)' and '\(extra.key)'; an expectation is about one thing",
                  hint: "split it into two expectations")
        }

        let subjectKey = subjectEntry.key
        let validChecks: [String]
        switch subjectKey {
        case "request", "after": validChecks = Self.requestCheckKeys
        case "server": validChecks = Self.serverCheckKeys
        default: validChecks = []
        }
        // Checks that exist but not for this subject.
        var misplaced: Set<String> = []
        for entry in map.entries where !validChecks.contains(entry.key) && !Self.subjectKeys.contains(entry.key) {
            let message: String
            let hint: String
            if Self.requestCheckKeys.contains(entry.key) {
                message = "'\(entry.key)' checks requests; it does not apply to a '\(subjectKey)' expectation"
                hint = subjectKey == "server"
                    ? "a 'server' expectation checks 'count'; use 'request:' or 'after:' to check '\(entry.key)'"
                    : "a 'relay' expectation puts its checks inside 'relay:': \(Self.relayCheckKeys.joined(separator: ", "))"
            } else if Self.serverCheckKeys.contains(entry.key) {
                message = "'count' applies to 'server' expectations, not to a '\(subjectKey)' expectation"
                hint = subjectKey == "relay"
                    ? "count connections with 'new_connections: { count: N }' inside 'relay:'"
                    : "use 'requests: N' for how many requests this covers"
            } else if Self.relayCheckKeys.contains(entry.key) {
                message = "'\(entry.key)' is a relay check; it does not apply to a '\(subjectKey)' expectation"
                hint = "write it inside a relay expectation: '- relay: { \(entry.key): … }'"
            } else {
                continue
            }
            misplaced.insert(entry.key)
            error(entry.keyLocation, message, hint: hint)
        }
        let unknown = rejectUnknownKeys(map, allowed: Self.subjectKeys + Self.expectationKeys + validChecks, skipping: misplaced)
        var judges = Expectation.Judged.library
        if let entry = map.entries.first(where: { $0.key == "judges" }),
           let chosen = choice(entry, what: "judges", options: Expectation.Judged.allCases.map { ($0.rawValue, $0) }) {
            judges = chosen
        }

        var subject: Expectation.Subject?
        var checks: [LocatedCheck] = []
        switch subjectKey {
        case "request":
            if let name = scalar(subjectEntry, expected: "a request name") {
                if let requestNames, requestNames[name] == nil {
                    let known = requestNames.sorted { $0.value.line < $1.value.line }.map(\.key)
                    let hint = closestMatch(to: name, among: known).map { "did you mean '\($0)'?" }
                        ?? (known.isEmpty ? "name a request step with '- request: \(name)'" : "requests in the timeline: \(known.joined(separator: ", "))")
                    error(subjectEntry.valueLocation, "no request named '\(name)' in the timeline", hint: hint)
                } else {
                    subject = .request(name)
                }
            }
        case "after":
            subject = duration(subjectEntry).map { .requestsAfter($0) }
        case "server":
            subject = serverSubject(subjectEntry)
        default:
            subject = .relay
            checks = relayChecks(subjectEntry)
        }

        for entry in map.entries where validChecks.contains(entry.key) {
            if let check = check(entry) { checks.append(LocatedCheck(check, location: entry.keyLocation)) }
        }
        contradictions(in: checks)
        if validChecks.isEmpty == false, !map.entries.contains(where: { validChecks.contains($0.key) }), misplaced.isEmpty, unknown.isEmpty {
            error(subjectEntry.keyLocation, "\(place) has no checks; add one of \(validChecks.joined(separator: ", "))",
                  hint: subjectKey == "server"
                      ? "count goes beside 'server:', not inside its braces: '- server: { path: /order }' and, on the next line, '    count: 1'"
                      : "for example: status: 200")
        }
        guard let subject, subjects.count == 1, errorCount == errorsBefore else { return nil }
        return Expectation(subject: subject, checks: checks, location: subjectEntry.keyLocation, judges: judges)
    }

    /// Checks on one request that can never hold together (QA 61: `error: none` beside
    /// `message: boom` passed the check, and failed every run): one that holds only for an
    /// answer without error (`headers`, `body` equal to or lacking a text, `error: none`) beside
    /// one that holds only for a failure (`error` of a kind or `any`, `message`). `status`,
    /// `body: { contains }` and a digest also hold for an answer cut short after its head (a
    /// `200` whose body then timed out), so they go with either. Said at the later of the two.
    private func contradictions(in checks: [LocatedCheck]) {
        func key(_ check: Check) -> (name: String, answered: Bool)? {
            switch check {
            case .headers: ("headers", true)
            case .body(.equals): ("body", true)
            case .body(.notContains): ("body: { not_contains }", true)
            case .error(.none): ("error: none", true)
            case .error: ("error", false)
            case .errorMessage: ("message", false)
            default: nil
            }
        }
        var seen: [(name: String, answered: Bool, location: SourceLocation)] = []
        for located in checks {
            guard let (name, answered) = key(located.check) else { continue }
            if let other = seen.first(where: { $0.answered != answered }) {
                error(located.location, "'\(name)' and '\(other.name)' (line \(other.location.line)) cannot both hold: one needs an answer without error, the other a failure",
                      hint: "'headers', 'body' (equal or not_contains) and 'error: none' check an answer; 'error' and 'message' a failure: keep the one this expectation means")
                return
            }
            seen.append((name, answered, located.location))
        }
    }

    private func serverSubject(_ entry: Entry) -> Expectation.Subject? {
        if entry.value.isNull { return .server(method: nil, path: nil) }
        guard let map = mapping(entry, place: "'server'") else { return nil }
        rejectUnknownKeys(map, allowed: ["method", "path"])
        let method = map["method"].flatMap(self.method)
        let path = map["path"].flatMap { pathWithoutQuery($0, what: "server path", matched: "the server's requests are counted by") }
        return .server(method: method, path: path)
    }

    // MARK: Checks on requests and the server

    private func check(_ entry: Entry) -> Check? {
        switch entry.key {
        case "status": return status(entry).map { .status($0) }
        case "error":
            return choice(entry, what: "error kind", options: Self.errorWords.map { word in
                (word, word == "none" ? ErrorExpectation.none : word == "any" ? .any : .kind(ErrorKind(rawValue: word)!))
            }).map { .error($0) }
        case "within": return positiveDuration(entry, hint: "the longest a request may take, e.g. within: 2s").map { .within($0) }
        case "body": return bodyCheck(entry).map { .body($0) }
        case "headers": return headerChecks(entry).map { .headers($0) }
        case "connection":
            return choice(entry, what: "connection use", options: [("new", ConnectionUse.new), ("reused", .reused)]).map { .connection($0) }
        case "requests": return countRange(entry).map { .requestCount($0) }
        case "message": return textMatch(entry).map { .errorMessage($0) }
        case "count": return countRange(entry).map { .serverCount($0) }
        default: return nil
        }
    }

    private func bodyCheck(_ entry: Entry) -> BodyCheck? {
        switch entry.value {
        case .scalar(let scalar) where !entry.value.isNull:
            return .equals(scalar.string)
        case .mapping:
            guard let map = mapping(entry, place: "'body'"),
                  let form = oneForm(of: map, named: "'body'", forms: ["equals", "contains", "not_contains", "sha256"]),
                  let value = text(form, allowEmpty: form.key == "equals") else { return nil }
            switch form.key {
            case "equals": return .equals(value)
            case "contains": return .contains(value)
            case "not_contains": return .notContains(value)
            default:
                let digest = value.lowercased()
                guard digest.count == 64, digest.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) || ("a"..."f").contains($0) }) else {
                    error(form.valueLocation, "'\(value)' is not a SHA-256 digest; expected 64 hexadecimal digits, found \(value.count) characters",
                          hint: "compute it with: shasum -a 256 FILE")
                    return nil
                }
                return .sha256(digest)
            }
        default:
            error(entry.valueLocation, "'body' must be text or one of { equals: … }, { contains: … }, { not_contains: … }, { sha256: … }, found \(entry.value.foundDescription)")
            return nil
        }
    }

    /// `message:` — text (contains), or `{ starts_with: … }` / `{ contains: … }`.
    private func textMatch(_ entry: Entry) -> TextMatch? {
        let form: Entry
        switch entry.value {
        case .scalar where !entry.value.isNull:
            form = entry
        case .mapping:
            guard let map = mapping(entry, place: "'\(entry.key)'"),
                  let given = oneForm(of: map, named: "'\(entry.key)'", forms: ["starts_with", "contains"],
                                      hint: "for example: \(entry.key): { starts_with: \"captive portal:\" }") else { return nil }
            form = given
        default:
            error(entry.valueLocation, "'\(entry.key)' must be text or one of { starts_with: … }, { contains: … }, found \(entry.value.foundDescription)",
                  hint: "for example: \(entry.key): { starts_with: \"captive portal:\" }")
            return nil
        }
        guard let value = text(form, allowEmpty: false) else { return nil }
        return form.key == "starts_with" ? .startsWith(value) : .contains(value)
    }

    /// The one key of `forms` a mapping gives (`{ contains: … }`); reports none, several, or others.
    func oneForm(of map: Mapping, named what: String, forms: [String], hint: String? = nil) -> Entry? {
        rejectUnknownKeys(map, allowed: forms)
        let given = map.entries.filter { forms.contains($0.key) }
        let choices = forms.dropLast().joined(separator: ", ") + " or " + forms.last!
        guard let form = given.first else {
            if map.entries.isEmpty {
                error(map.location, "\(what) needs one of \(choices)", hint: hint)
            }
            return nil
        }
        for extra in given.dropFirst() {
            error(extra.keyLocation, "\(what) has both '\(form.key)' and '\(extra.key)'; give one of \(choices)",
                  hint: "use two expectations to check both")
        }
        return given.count == 1 ? form : nil
    }

    /// `N` (exactly), or `{ min: A, max: B }` with at least one of the two.
    func countRange(_ entry: Entry) -> CountRange? {
        if case .mapping = entry.value {
            guard let map = mapping(entry) else { return nil }
            rejectUnknownKeys(map, allowed: ["min", "max"])
            return minMax(map, what: "'\(entry.key)'") { self.integer($0, range: 0...Int.max, expected: "a count, 0 or more") }
        }
        return integer(entry, range: 0...Int.max, expected: "a count (0 or more) or { min: A, max: B }").map(CountRange.exactly)
    }

    /// `min`/`max` of a mapping as a range; at least one given, min ≤ max.
    func minMax(_ map: Mapping, what: String, read: (Entry) -> Int?) -> CountRange? {
        let minEntry = map["min"]
        let maxEntry = map["max"]
        guard minEntry != nil || maxEntry != nil else {
            error(map.location, "\(what) needs 'min', 'max' or both")
            return nil
        }
        let minimum = minEntry.flatMap(read)
        let maximum = maxEntry.flatMap(read)
        if (minEntry != nil && minimum == nil) || (maxEntry != nil && maximum == nil) { return nil }
        if minimum == 0, maxEntry == nil, let minEntry {
            // A check that cannot fail (QA 40): every count is at least 0.
            error(minEntry.valueLocation, "\(what): 'min: 0' alone always holds: nothing is counted fewer than 0 times",
                  hint: "give 'min: 1' to ask for at least one, or a 'max'")
            return nil
        }
        if let minimum, let maximum, minimum > maximum, let maxEntry {
            error(maxEntry.valueLocation, "'max' (\(maxEntry.value.scalar?.string ?? "")) is less than 'min' (\(minEntry?.value.scalar?.string ?? ""))",
                  hint: "swap them, or raise 'max'")
            return nil
        }
        return CountRange(minimum: minimum, maximum: maximum)
    }

    // MARK: Relay checks

    private func relayChecks(_ entry: Entry) -> [LocatedCheck] {
        guard let map = mapping(entry, place: "'relay'") else { return [] }
        rejectUnknownKeys(map, allowed: Self.relayCheckKeys)
        var checks: [LocatedCheck] = []
        if !map.entries.contains(where: { Self.relayCheckKeys.contains($0.key) }) {
            error(entry.keyLocation, "'relay' needs at least one of new_connections, attempts, bytes, requests or responses",
                  hint: "for example: relay: { new_connections: { from: 5s, max: 2 } } or relay: { requests: { method: POST, count: 1 } }")
            return []
        }
        for item in map.entries {
            let check: Check?
            switch item.key {
            case "new_connections": check = newConnections(item)
            case "attempts": check = attempts(item)
            case "bytes": check = bytes(item)
            case "requests": check = httpRequests(item)
            case "responses": check = httpResponses(item)
            default: continue
            }
            if let check { checks.append(LocatedCheck(check, location: item.keyLocation)) }
        }
        return checks
    }

    func window(_ map: Mapping) -> TimeWindow? {
        let from = map["from"]
        let to = map["to"]
        let start = from.flatMap(duration)
        let end = to.flatMap(duration)
        if (from != nil && start == nil) || (to != nil && end == nil) { return nil }
        if let start, let end, start >= end, let to {
            error(to.valueLocation, "the window is empty: 'to' (\(end.compactDescription)) must be later than 'from' (\(start.compactDescription))",
                  hint: "a window covers from ≤ t < to; leave out 'to' for an open end")
            return nil
        }
        return TimeWindow(from: start, to: end)
    }

    private func newConnections(_ entry: Entry) -> Check? {
        if case .scalar = entry.value, !entry.value.isNull {
            return integer(entry, range: 0...Int.max, expected: "a count (0 or more) or a mapping").map { .newConnections(TimeWindow(), .exactly($0)) }
        }
        guard let map = mapping(entry) else { return nil }
        rejectUnknownKeys(map, allowed: ["from", "to", "count", "min", "max"])
        let errorsBefore = errorCount
        let window = self.window(map)
        var range: CountRange?
        if map["count"] == nil, map["min"] == nil, map["max"] == nil {
            error(map.location, "'new_connections' needs 'count', 'min' or 'max'", hint: "for example: new_connections: { from: 5s, max: 2 }")
        } else {
            range = countOrRange(map, in: "'new_connections'")
        }
        guard let window, let range, errorCount == errorsBefore else { return nil }
        return .newConnections(window, range)
    }

    /// `count: N` (exactly) or `min`/`max` in a relay check's mapping that gives at least one of them.
    func countOrRange(_ map: Mapping, in what: String) -> CountRange? {
        guard let count = map["count"] else {
            return minMax(map, what: what) { self.integer($0, range: 0...Int.max, expected: "a count, 0 or more") }
        }
        if let other = map["min"] ?? map["max"] {
            error(other.keyLocation, "'count' and '\(other.key)' exclude each other in \(what)",
                  hint: "'count: N' means exactly N; use 'min'/'max' for a range")
            return nil
        }
        return integer(count, range: 0...Int.max, expected: "a count, 0 or more").map(CountRange.exactly)
    }

    private func attempts(_ entry: Entry) -> Check? {
        guard let map = mapping(entry) else { return nil }
        rejectUnknownKeys(map, allowed: ["from", "to", "min_growth", "max_per_second"])
        let errorsBefore = errorCount
        let window = self.window(map)
        let growth = map["min_growth"].flatMap { number($0, expected: "a positive number (each gap at least this × the one before)", isValid: { $0 > 0 }) }
        let rate = map["max_per_second"].flatMap { number($0, expected: "a positive number of attempts per second", isValid: { $0 > 0 }) }
        if map["min_growth"] == nil, map["max_per_second"] == nil {
            error(map.location, "'attempts' needs 'min_growth', 'max_per_second' or both",
                  hint: "min_growth: 1.5 checks exponential back-off; max_per_second: 2 bounds a retry storm")
        }
        guard let window, errorCount == errorsBefore else { return nil }
        return .attempts(window, minimumGrowth: growth, maximumPerSecond: rate)
    }

    private func bytes(_ entry: Entry) -> Check? {
        guard let map = mapping(entry) else { return nil }
        rejectUnknownKeys(map, allowed: ["dir", "from", "to", "min", "max"])
        let errorsBefore = errorCount
        let window = self.window(map)
        let direction = map["dir"].flatMap { choice($0, what: "direction", options: Direction.allCases.map { ($0.rawValue, $0) }) }
        let range = minMax(map, what: "'bytes'") { self.byteCount($0)?.bytes }
        guard let window, let range, errorCount == errorsBefore else { return nil }
        return .bytes(direction, window, range)
    }
}
