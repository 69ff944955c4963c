import Yams
import NetsimCore
import NetsimLink
import NetsimFaults

extension Validator {
    static let stepActions = ["request", "fault", "clear", "link", "wait", "login"]
    static let actionKeys: [String: [String]] = [
        "request": ["method", "path", "headers", "body", "count", "parallel", "every"],
        "fault": ["name", "target", "probability", "after_open", "for"],
        "clear": [],
        "link": [],
        "wait": [],
        "login": [],
    ]
    static var allStepKeys: [String] {
        ["at"] + stepActions + stepActions.flatMap { actionKeys[$0] ?? [] }
    }

    /// What the timeline has seen so far, for checks that span steps.
    private struct TimelineState {
        var requestNames: [String: SourceLocation] = [:]
        /// Faults added by earlier steps, by name.
        var faultNames: [String: SourceLocation] = [:]
        /// Every named fault in the file, to tell "added later" from "never added".
        var allFaultNames: [String: SourceLocation] = [:]
        /// Where the first `portal` fault was added (a `login` needs one before it).
        var firstPortal: SourceLocation?
        /// The latest `at` so far and where it was written.
        var latestAt: (time: Duration, location: SourceLocation)?
        /// The earliest the next step can start, from the `at`s and `wait`s so far (requests take
        /// a time not known before the run), and the `wait` that set it, if one did.
        var earliest: (time: Duration, wait: SourceLocation?) = (.zero, nil)
    }

    /// `requestNames` is set once the timeline is a list, to every request name in it.
    func timeline(_ entry: Entry, requestNames: inout [String: SourceLocation]?) -> [TimelineStep]? {
        guard let items = list(entry, of: "steps") else { return nil }
        requestNames = [:]
        if items.isEmpty {
            error(entry.keyLocation, "'timeline' is empty; add at least one step",
                  hint: "for example: - request: first with path: /")
            return nil
        }
        var state = TimelineState()
        state.allFaultNames = namedFaults(in: items)
        var steps: [TimelineStep] = []
        var ok = true
        for (index, item) in items.enumerated() {
            if let step = self.step(item, number: index + 1, state: &state) {
                steps.append(step)
            } else {
                ok = false
            }
        }
        // A step that is not a mapping, or has no action, may be a request whose name was lost:
        // then no expectation can be told that its request does not exist.
        let unreadable = items.contains { item in
            guard case .mapping(let pairs) = item else { return true }
            return !pairs.contains { pair in pair.key.scalar.map { Self.stepActions.contains(renamedKeys[$0.string] ?? $0.string) } ?? false }
        }
        requestNames = unreadable ? nil : state.requestNames
        return ok ? steps : nil
    }

    /// A quick look ahead: `name:` of every fault step.
    private func namedFaults(in items: [Node]) -> [String: SourceLocation] {
        var names: [String: SourceLocation] = [:]
        for item in items {
            guard case .mapping(let pairs) = item else { continue }
            let keys = pairs.map { pair in pair.key.scalar.map { renamedKeys[$0.string] ?? $0.string } }
            guard keys.contains("fault"), let i = keys.firstIndex(of: "name"), case .scalar(let value) = pairs[i].value else { continue }
            if names[value.string] == nil { names[value.string] = location(pairs[i].value) }
        }
        return names
    }

    private func step(_ node: Node, number: Int, state: inout TimelineState) -> TimelineStep? {
        let place = "timeline step \(number)"
        guard let map = mapping(node, what: place, place: place) else { return nil }
        let errorsBefore = errorCount
        let actions = map.entries.filter { Self.stepActions.contains($0.key) }

        // Keys that belong to another kind of step get their own message, not "unknown key".
        var explained: Set<String> = []
        if let action = actions.first {
            let own = ["at", action.key] + (Self.actionKeys[action.key] ?? [])
            for entry in map.entries where !own.contains(entry.key) && !Self.stepActions.contains(entry.key) {
                if let owner = Self.stepActions.first(where: { Self.actionKeys[$0]?.contains(entry.key) ?? false }) {
                    explained.insert(entry.key)
                    error(entry.keyLocation, "'\(entry.key)' belongs to \(owner) steps, not to a \(action.key) step",
                          hint: "keys of a \(action.key) step: \(own.joined(separator: ", "))")
                }
            }
            let allowed = ["at"] + Self.stepActions + (Self.actionKeys[action.key] ?? [])
            rejectUnknownKeys(map, allowed: allowed, suggestions: own, skipping: explained)
        } else {
            let unknown = rejectUnknownKeys(map, allowed: Self.allStepKeys)
            let misspelledAction = unknown.contains { closestMatch(to: $0.key, among: Self.stepActions) != nil }
            if !misspelledAction {
                error(map.location, "\(place) has no action; give it one of request, fault, clear, link, wait or login",
                      hint: "a step does one thing, e.g. '- request: name' or '- wait: 2s'")
            }
            return nil
        }
        for extra in actions.dropFirst() {
            error(extra.keyLocation, "\(place) has two actions, '\(actions[0].key)' and '\(extra.key)'; a step does one thing",
                  hint: "split it into two steps")
        }

        var at: Duration?
        if let e = map["at"], let value = duration(e) {
            at = value
            if let latest = state.latestAt, value < latest.time {
                error(e.valueLocation,
                      "step at \(value.compactDescription) comes after a step at \(latest.time.compactDescription) (line \(latest.location.line)); steps run in order, so 'at' cannot go back in time",
                      hint: "reorder the steps, or give this one an 'at' of \(latest.time.compactDescription) or later")
            } else if let wait = state.earliest.wait, value < state.earliest.time {
                // QA 52: `wait: 2s` then `at: 1s` passed `check` and ran the step at 2 s, unsaid.
                let earliest = state.earliest.time.compactDescription
                error(e.valueLocation,
                      "step at \(value.compactDescription) comes after a wait that ends at \(earliest) at the earliest (line \(wait.line)); steps run in order, so this one cannot start at \(value.compactDescription)",
                      hint: "give it an 'at' of \(earliest) or later, shorten the wait, or leave 'at' out to start when the wait ends")
            } else {
                state.latestAt = (value, e.valueLocation)
            }
        }
        let start = max(at ?? .zero, state.earliest.time)
        state.earliest.time = start

        let action = actions[0]
        let result: TimelineStep.Action?
        switch action.key {
        case "request": result = request(action, in: map, state: &state)
        case "fault": result = fault(action, in: map, state: &state)
        case "clear": result = clear(action, state: state)
        case "link": result = link(action, step: number).map { .link($0) }
        case "login": result = login(action, state: state)
        default:
            result = duration(action).map { .wait($0) }
            if case .wait(let pause) = result {
                state.earliest = (start + pause, map.location)
            }
        }
        guard let result, actions.count == 1, errorCount == errorsBefore else { return nil }
        return TimelineStep(at: at, action: result, location: map.location)
    }

    // MARK: request

    private func request(_ action: Entry, in map: Mapping, state: inout TimelineState) -> TimelineStep.Action? {
        let name = self.name(action, what: "the request name")
        if let name {
            if let first = state.requestNames[name] {
                error(action.valueLocation, "duplicate request name '\(name)'; it was already used at line \(first.line)",
                      hint: "expectations refer to requests by name, so each name is used once")
            } else {
                state.requestNames[name] = action.valueLocation
            }
        }
        var step = RequestStep(name: name ?? "", path: "/")
        if let e = map["method"], let v = method(e) { step.method = v }
        if let e = require("path", in: map, hint: "add 'path: /something'"), let v = path(e) { step.path = v }
        if let e = map["headers"], let v = headers(e) { step.headers = v }
        if let e = map["body"], let v = text(e) { step.body = v }
        var countOK = true
        if let e = map["count"] {
            // Bounded: a scenario is a test, not a load generator (a count near Int.max opened
            // connections until the process ran out of descriptors).
            if let v = integer(e, range: 1...100_000, expected: "a number of requests from 1 to 100000") { step.count = v } else { countOK = false }
        }
        if let e = map["parallel"], let v = integer(e, range: 1...1_000, expected: "a number of requests in flight from 1 to 1000") {
            if countOK, v > step.count {
                error(e.valueLocation, "'parallel' (\(v)) cannot exceed 'count' (\(step.count))",
                      hint: "parallel is how many of the count requests are in flight at once")
            } else {
                step.parallel = v
            }
        }
        if let e = map["every"], let v = positiveDuration(e, hint: "it is the time between the starts of the step's requests; "
                                                             + "to start several at once, use 'parallel' instead") {
            if let parallel = map["parallel"] {
                error(parallel.keyLocation, "'parallel' and 'every' exclude each other: with 'every' a request starts on time whatever is in flight",
                      hint: "remove 'parallel'; 'every: \(v.compactDescription)' with 'count' sends one request each \(v.compactDescription)")
            } else if countOK, step.count < 2 {
                error(e.keyLocation, "'every' needs 'count' of 2 or more: it is the time between the starts of the step's requests",
                      hint: "for example: count: 5 with every: \(v.compactDescription)")
            } else if countOK, v * (step.count - 1) > Duration.maximumParsed {
                error(e.valueLocation, "'every' × ('count' − 1) is longer than a year (8760h): the last request would never start",
                      hint: "use fewer requests or a shorter 'every'")
            } else {
                step.every = v
            }
        }
        return .request(step)
    }

    // MARK: fault

    private func fault(_ action: Entry, in map: Mapping, state: inout TimelineState) -> TimelineStep.Action? {
        let errorsBefore = errorCount
        var kind: FaultKind?
        if let raw = scalar(action, expected: "a fault such as stale=rst") {
            do {
                kind = try FaultKind(parsing: raw)
            } catch let failure as UnitParseError {
                let word = String(raw.split(separator: "=", maxSplits: 1).first ?? "")
                let hint: String
                if !FaultCatalog.names.contains(word), let near = closestMatch(to: word, among: FaultCatalog.names) {
                    hint = "did you mean '\(near)'? Write it as \(failure.allowedForms)"
                } else {
                    hint = "write it as \(failure.allowedForms)"
                }
                let what = FaultCatalog.names.contains(word) ? failure.expected : "a known fault"
                error(action.valueLocation, "fault: '\(raw)' is not \(what)", hint: hint)
            } catch {
                self.error(action.valueLocation, "fault: \(error)")
            }
        }
        var name: String?
        if let e = map["name"], let value = self.name(e, what: "the fault name") {
            if value == "all" {
                error(e.valueLocation, "'all' cannot name a fault: 'clear: all' lifts every fault",
                      hint: "choose another name")
            } else if let first = state.faultNames[value] {
                error(e.valueLocation, "duplicate fault name '\(value)'; it was already used at line \(first.line)",
                      hint: "'clear' lifts faults by name, so each name is used once")
            } else {
                name = value
                state.faultNames[value] = e.valueLocation
            }
        }
        var rule = FaultRule(kind ?? .rst)
        if let e = map["target"], let v = choice(e, what: "fault target", options: FaultTarget.allCases.map { ($0.rawValue, $0) }) {
            rule.target = v
        }
        if let e = map["probability"], let v = probability(e) { rule.probability = v }
        var afterOpen: Entry?
        if let e = map["after_open"], let v = duration(e) {
            rule.trigger = .after(v)
            afterOpen = e
        }
        if let e = map["for"], let v = positiveDuration(e, hint: "leave 'for' out to keep the fault until a 'clear' step lifts it") {
            rule.lasts = v
        }
        guard let kind, errorCount == errorsBefore else { return nil }
        if kind.isPortal, state.firstPortal == nil { state.firstPortal = action.valueLocation }
        do {
            try rule.validate(on: linkMode == .packet ? .packet : .relay)
        } catch {
            if linkMode == .packet {
                // At the key the error is about, when the step has it (the caret was under the fault).
                let place = (error as? FaultRuleError)?.key.flatMap { map[$0]?.keyLocation } ?? action.valueLocation
                self.error(place, "fault: \(error)", hint: "docs/packet.md lists what each packet fault does")
            } else if rule.target == .existing, let e = map["target"] {
                self.error(e.valueLocation, "\(kind.name) acts on new connections only; it cannot target existing ones",
                           hint: "use 'target: all' or 'target: new'")
            } else if let afterOpen {
                self.error(afterOpen.keyLocation, "\(kind.name) acts when a connection is accepted, so 'after_open' cannot delay it",
                           hint: "give the step an 'at' instead")
            } else {
                self.error(action.valueLocation, "fault: \(error)")
            }
            return nil
        }
        if kind.actsOnInterceptedHTTP2Only, let noHTTP2 {
            error(action.valueLocation, "fault: \(kind.name) acts on HTTP/2 the relay intercepts, and \(noHTTP2.why): it would do nothing",
                  hint: noHTTP2.hint)
            return nil
        }
        return .fault(name: name, rule: rule)
    }

    // MARK: login

    /// `login:` (or `login: true`): the user signs in at the captive portal; every `portal`
    /// fault lifts.
    private func login(_ action: Entry, state: TimelineState) -> TimelineStep.Action? {
        let isTrue = action.value.scalar.map { Self.trueWords.contains($0.string.lowercased()) } ?? false
        guard action.value.isNull || isTrue else {
            error(action.valueLocation, "'login' takes no value, found \(action.value.foundDescription)",
                  hint: "write 'login:' or 'login: true'; it lifts every portal fault (use 'clear' to lift other faults by name)")
            return nil
        }
        guard state.firstPortal != nil else {
            error(action.keyLocation, "'login' signs in at a captive portal, but no portal fault was added before this step",
                  hint: "add the portal first, e.g. '- fault: portal' (or portal=page), then '- login:' later")
            return nil
        }
        return .login
    }

    // MARK: clear

    private func clear(_ action: Entry, state: TimelineState) -> TimelineStep.Action? {
        var words: [(String, SourceLocation)] = []
        switch action.value {
        case .scalar(let scalar) where !action.value.isNull:
            words = [(scalar.string, action.valueLocation)]
        case .sequence(let items):
            for item in items {
                guard case .scalar(let scalar) = item, !item.isNull else {
                    error(location(item), "each item of 'clear' must be a fault name, found \(item.foundDescription)")
                    return nil
                }
                words.append((scalar.string, location(item)))
            }
            if words.isEmpty {
                error(action.valueLocation, "'clear' lists no faults", hint: "name the faults to lift, or write 'clear: all'")
                return nil
            }
        default:
            error(action.valueLocation, "'clear' must be a fault name, a list of names, or 'all', found \(action.value.foundDescription)")
            return nil
        }
        if words.count == 1, words[0].0 == "all" { return .clear(names: []) }
        var names: [String] = []
        var ok = true
        for (word, location) in words {
            if word == "all" {
                error(location, "'all' cannot be combined with fault names", hint: "write 'clear: all' on its own")
                ok = false
            } else if names.contains(word) {
                // QA 52: `clear: [kill, kill]` passed; a second name was most likely meant.
                error(location, "fault '\(word)' is named twice in this 'clear'", hint: "name each fault once; was another fault meant?")
                ok = false
            } else if state.faultNames[word] != nil {
                names.append(word)
            } else if let later = state.allFaultNames[word] {
                error(location, "fault '\(word)' is only added later, at line \(later.line); 'clear' can lift faults added by earlier steps",
                      hint: "move this step after the one that adds '\(word)'")
                ok = false
            } else {
                let known = Array(state.faultNames.keys).sorted()
                let hint = closestMatch(to: word, among: known).map { "did you mean '\($0)'?" }
                    ?? (known.isEmpty ? "give the fault step 'name: \(word)' to clear it by name, or write 'clear: all'"
                                      : "faults named so far: \(known.joined(separator: ", "))")
                error(location, "no fault named '\(word)' was added before this step", hint: hint)
                ok = false
            }
        }
        return ok ? .clear(names: names) : nil
    }
}

extension Validator {
    /// A request expectation's `requests:` covers the requests its step sends, `count` of them:
    /// a range without that count could never hold (QA 61: `requests: 5` on a step of four
    /// passed `netsim check` and failed every run).
    func checkRequestCounts(timeline: [TimelineStep], expectations: [Expectation]) {
        var steps: [String: (count: Int, line: Int)] = [:]
        for step in timeline {
            if case .request(let request) = step.action { steps[request.name] = (request.count, step.location.line) }
        }
        for expectation in expectations {
            guard case .request(let name) = expectation.subject, let step = steps[name] else { continue }
            for located in expectation.checks {
                guard case .requestCount(let range) = located.check, !range.contains(step.count) else { continue }
                let sends = step.count == 1 ? "one request" : "\(step.count) requests"
                error(located.location, "'requests' (\(range)) cannot hold: request '\(name)' (line \(step.line)) sends \(sends)",
                      hint: "a request expectation covers the requests its step sends ('count', 1 when not given); 'after:' counts the requests sent from a time on")
            }
        }
    }
}
