import NetsimCore
import NetsimHTTP
import NetsimScenario

/// Judges expectations against what a run observed.
struct ExpectationJudge {
    let observations: Observations

    func judge(_ expectations: [Expectation]) -> [CheckVerdict] {
        expectations.flatMap { expectation in
            expectation.checks.map { judge($0, of: expectation) }
        }
    }

    private func judge(_ located: LocatedCheck, of expectation: Expectation) -> CheckVerdict {
        let title = "\(Self.describe(expectation.subject)): \(Self.describe(located.check))"
        var verdict = CheckVerdict(expectation: expectation, check: located, passed: false, title: title, expected: "", actual: "")
        switch expectation.subject {
        case .request, .requestsAfter:
            let outcomes = subjects(expectation.subject)
            let began: Int64 = if case .requestsAfter(let time) = expectation.subject {
                time.nanoseconds
            } else {
                outcomes.map(\.started).min() ?? 0
            }
            judgeRequests(located.check, outcomes, began: began, into: &verdict)
        case .server(let method, let path):
            let matching = observations.serverRequests.filter {
                (method == nil || $0.method == method) && (path == nil || $0.path == path)
            }
            if case .serverCount(let range) = located.check {
                verdict.expected = range.of("request")
                verdict.actual = "the server received \(matching.count)"
                    + (matching.isEmpty ? "" : ": " + matching.prefix(5).map { "\($0.method) \($0.path) at \(formatNanoseconds($0.time))" }.joined(separator: ", "))
                    + (matching.count > 5 ? ", … and \(matching.count - 5) more" : "")
                verdict.passed = range.contains(matching.count)
                verdict.focus = Self.focus(on: matching.map(\.time), range: range, from: nil)
            }
        case .relay:
            judgeRelay(located.check, into: &verdict)
        case .client:
            break  // no scenario writes it: ``clientEnd(_:of:)`` and ``clientAnswers(_:of:)`` judge it
        }
        return verdict
    }

    /// The failed verdict on an exec client that did not exit with status 0 once its stdin
    /// closed (`ending`: how it ended, from ``ClientDriver/endProblem``); nil when it did.
    /// docs/drivers.md, "End": such a client fails the run, and the run says how it ended.
    static func clientEnd(_ ending: String?, of scenario: Scenario) -> CheckVerdict? {
        guard let ending else { return nil }
        return clientVerdict(.exitedCleanly, of: scenario, expected: "exit status 0 once stdin closed and every answer was out (docs/drivers.md, End)", actual: ending)
    }

    /// The failed verdict on an exec client that left requests to netsim's stand-in answers
    /// (no answer line by the deadline, or it exited first); nil when it answered every one.
    /// docs/drivers.md, "End": a client that leaves a request unanswered fails the run.
    static func clientAnswers(_ outcomes: [RequestOutcome], of scenario: Scenario) -> CheckVerdict? {
        let standIns = outcomes.filter { ExecDriver.isNetsims($0.response) }
        guard let first = standIns.first else { return nil }
        let listed = standIns.prefix(3).map { "\($0.label) (\($0.response.errorMessage ?? "no answer"))" }.joined(separator: "; ")
        var verdict = clientVerdict(.answeredEveryRequest, of: scenario, expected: "an answer line from the client for every request (docs/drivers.md)",
                                    actual: "\(standIns.count) of \(outcomes.count) got netsim's stand-in answer: \(listed)\(standIns.count > 3 ? "; …" : "")")
        verdict.focus = first.started
        return verdict
    }

    private static func clientVerdict(_ check: Check, of scenario: Scenario, expected: String, actual: String) -> CheckVerdict {
        let location = scenario.client.location
        let located = LocatedCheck(check, location: location)
        return CheckVerdict(
            expectation: Expectation(subject: .client, checks: [located], location: location), check: located, passed: false,
            title: "\(describe(.client)): \(describe(check))", expected: expected, actual: actual)
    }

    private func subjects(_ subject: Expectation.Subject) -> [RequestOutcome] {
        switch subject {
        case .request(let name): observations.outcomes.filter { $0.name == name }
        case .requestsAfter(let time): observations.outcomes.filter { $0.started >= time.nanoseconds }
        default: []
        }
    }

    // MARK: Requests

    /// `began`: when the subject began (its first request, or its `after:` time); a `new`
    /// connection is one the relay accepted since.
    private func judgeRequests(_ check: Check, _ outcomes: [RequestOutcome], began: Int64, into verdict: inout CheckVerdict) {
        if case .requestCount(let range) = check {
            verdict.expected = range.of("request")
            verdict.actual = "\(outcomes.count) ran"
            verdict.passed = range.contains(outcomes.count)
            verdict.focus = outcomes.first?.started
            return
        }
        let (expected, holds): (String, (RequestOutcome) -> Bool) = switch check {
        case .status(let status): ("status \(status)", { $0.response.status == status })
        case .body(.equals(let text)): ("the body \(quoted(text))", { $0.response.body == text && $0.response.error == nil })
        case .body(.contains(let text)): ("a body containing \(quoted(text))", { $0.response.body?.contains(text) == true })
        case .body(.notContains(let text)):
            ("an answer whose body lacks \(quoted(text))",
             { $0.response.error == nil && $0.response.body?.contains(text) != true && !$0.response.bodyTextIsPartial })
        case .body(.sha256(let digest)): ("a body with SHA-256 \(digest)", { $0.response.bodySHA256?.lowercased() == digest.lowercased() })
        case .headers(let checks):
            ("an answer with " + checks.map(Self.describe).joined(separator: " and "),
             { outcome in outcome.response.error == nil && checks.allSatisfy { $0.holds(in: outcome.response.headers) } })
        case .error(.none): ("no error", { $0.response.error == nil })
        case .error(.any): ("an error", { $0.response.error != nil })
        case .error(.kind(let kind)): ("the error \(kind.rawValue)", { $0.response.error == kind })
        case .within(let bound): ("an answer or an error of the client's own within \(bound.compactDescription)", { $0.duration <= bound.nanoseconds })
        case .connection(.new): ("a connection opened since \(formatNanoseconds(began))", { ($0.connectionOpened ?? .min) >= began })
        case .connection(.reused): ("a connection already open at \(formatNanoseconds(began))", { ($0.connectionOpened ?? .max) < began })
        case .errorMessage(let match): ("an error message that \(Self.describe(match))", { $0.response.errorMessage.map(match.matches) ?? false })
        default: ("a check that applies to requests", { _ in false })
        }
        guard !outcomes.isEmpty else {
            verdict.expected = expected
            verdict.actual = "no such request ran"
            return
        }
        // An answer netsim made in the client's place (it crashed, never answered, broke the
        // protocol) passes no check: an `error: other` or `error: timeout` passed on a client that
        // had crashed, with no request ever sent.
        let failing = outcomes.filter { ExecDriver.isNetsims($0.response) || !holds($0) }
        verdict.expected = outcomes.count == 1 ? expected : "\(expected) for all \(outcomes.count) requests"
        verdict.passed = failing.isEmpty
        if failing.isEmpty {
            verdict.actual = outcomes.count == 1 ? outcomes[0].summary : "all \(outcomes.count) did"
        } else {
            var lines = failing.prefix(6).map { "\($0.label): \(detail(of: $0, for: check, began: began))" }
            if failing.count > 6 { lines.append("… and \(failing.count - 6) more") }
            verdict.actual = "\(failing.count) of \(outcomes.count) did not:\n" + lines.joined(separator: "\n")
            // The timeline around the moment the check was decided: the answer or the error
            // (a 100 s timeout's slice around its start showed nothing of it); for a connection
            // check, the moment the request went out on one.
            if case .connection = check { verdict.focus = failing.first?.started } else { verdict.focus = failing.first?.finished }
        }
    }

    /// What a request did, in the terms of the check it failed.
    private func detail(of outcome: RequestOutcome, for check: Check, began: Int64) -> String {
        if ExecDriver.isNetsims(outcome.response) {
            return "the client gave no answer of its own; netsim's stand-in: \(outcome.summary)"
        }
        switch check {
        case .connection:
            guard let connection = outcome.connection, let opened = outcome.connectionOpened else {
                // A connect that failed made no connection to name; only an answered request
                // (or one that failed after connecting) without a port is the client's silence.
                if outcome.response.fromClientCache {
                    return "it went over no relay connection: \(outcome.summary)"
                }
                if let error = outcome.response.error, [.refused, .dns].contains(error) {
                    return "it went over no relay connection: \(outcome.summary)"
                }
                return "the client did not report its local port, so its relay connection is unknown (\(outcome.summary))"
            }
            return "went over connection \(connection), opened at \(formatNanoseconds(opened))"
                + (opened < began ? ", before \(formatNanoseconds(began))" : "") + " (\(outcome.summary))"
        case .body(.sha256):
            // The digest it got, comparable with the one expected (the body itself may be binary).
            let digest = outcome.response.bodySHA256.map { "SHA-256 \($0.lowercased())" } ?? "no body"
            return "\(outcome.summary); body \(digest)"
        case .body(.notContains(let text)):
            guard outcome.response.error == nil, let body = outcome.response.body else { return outcome.summary }
            guard let found = body.range(of: text) else {
                guard outcome.response.bodyTextIsPartial else { return outcome.summary }
                return "\(outcome.summary); not in the body's first 64 KiB, but the body is \(outcome.response.bodyLength ?? 0) bytes and the rest was not seen"
            }
            // Where the text is, with some of what surrounds it.
            let from = body.index(found.lowerBound, offsetBy: -40, limitedBy: body.startIndex) ?? body.startIndex
            let to = body.index(found.upperBound, offsetBy: 40, limitedBy: body.endIndex) ?? body.endIndex
            return "\(outcome.summary); its body has it: \(from == body.startIndex ? "" : "…")\(quoted(String(body[from..<to])))\(to == body.endIndex ? "" : "…")"
        case .body:
            let body = outcome.response.body.map { quoted(String($0.prefix(120))) } ?? "no body"
            let seen = outcome.response.bodyTextIsPartial ? " (text checks see its first 64 KiB of \(outcome.response.bodyLength ?? 0) bytes)" : ""
            return "\(outcome.summary); body \(body)\(seen)"
        case .headers(let checks):
            guard outcome.response.error == nil else { return outcome.summary }
            // Each header it got, the ones that fail the check marked with what was wanted.
            let seen = checks.map { check in
                let got = HeaderCheck.value(of: check.name, in: outcome.response.headers).map { "\(check.name): \(quoted($0))" } ?? "no \(check.name)"
                return check.holds(in: outcome.response.headers) ? got : "\(got) (wanted \(Self.describe(check)))"
            }
            return "\(outcome.summary); " + seen.joined(separator: ", ")
        case .errorMessage:
            let time = formatNanoseconds(outcome.duration)
            let on = outcome.connection.map { " on connection \($0)" } ?? ""
            guard let error = outcome.response.error else {
                return "it succeeded with status \(outcome.response.status.map(String.init) ?? "none") in \(time)\(on), so there is no error message"
            }
            guard let message = outcome.response.errorMessage else {
                return "it failed (\(error.rawValue) after \(time)\(on)) but the client reported no error message"
            }
            return "it failed (\(error.rawValue) after \(time)\(on)) with the message \(quoted(String(message.prefix(200))))"
        default:
            return outcome.summary
        }
    }

    // MARK: Relay

    /// Attempts the relay could not see: while a `refuse` fault had its listener closed, the
    /// kernel refused them (a userspace relay sees no SYN). Nil when it never closed in `window`.
    private func unseenAttempts(in window: TimeWindow) -> String? {
        var closedAt: Int64?
        var spans: [String] = []
        for event in observations.events {
            switch event.kind {
            case .listenerClosed(let reason) where reason.hasPrefix("refuse"): closedAt = closedAt ?? event.time
            case .listening:
                if let from = closedAt, window.overlaps(from, event.time) { spans.append("\(formatNanoseconds(from))–\(formatNanoseconds(event.time))") }
                closedAt = nil
            default: break
            }
        }
        if let from = closedAt, window.overlaps(from, .max) { spans.append("from \(formatNanoseconds(from))") }
        guard !spans.isEmpty else { return nil }
        return "the relay's listener was closed (refuse) \(spans.joined(separator: ", ")): the kernel refused the attempts made then, and the relay does not see them"
    }

    private func judgeRelay(_ check: Check, into verdict: inout CheckVerdict) {
        switch check {
        case .newConnections(let window, let range):
            let opened = openedTimes(in: window)
            verdict.expected = "\(range.of("new connection")) \(describe(window))"
            verdict.actual = "the relay accepted \(opened.count)" + times(opened)
            verdict.passed = range.contains(opened.count)
            verdict.focus = Self.focus(on: opened, range: range, from: window.from?.nanoseconds)
        case .attempts(let window, let growth, let perSecond):
            let opened = openedTimes(in: window)
            verdict.focus = window.from?.nanoseconds ?? opened.first
            var problems: [String] = []
            var wants: [String] = []
            if let growth {
                wants.append("each gap between connection attempts at least \(formatRatio(growth))× the one before")
                let gaps = zip(opened.dropFirst(), opened).map { $0 - $1 }
                for (i, pair) in zip(gaps.dropFirst(), gaps).enumerated() where Double(pair.0) < growth * Double(pair.1) {
                    problems.append("gap \(i + 2) was \(formatNanoseconds(pair.0)) after a gap of \(formatNanoseconds(pair.1))")
                }
            }
            if let perSecond {
                wants.append("at most \(formatRatio(perSecond)) attempts in any second")
                let busiest = opened.indices.map { i -> Int in
                    let start = opened[i]
                    return opened[i...].prefix { $0 - start < 1_000_000_000 }.count
                }.max() ?? 0
                if Double(busiest) > perSecond { problems.append("\(busiest) attempts within one second") }
            }
            verdict.expected = wants.joined(separator: " and ") + " \(describe(window))"
            verdict.actual = "\(opened.count) attempts" + times(opened) + (problems.isEmpty ? "" : ":\n" + problems.prefix(6).joined(separator: "\n"))
            verdict.passed = problems.isEmpty
            verdict.note = unseenAttempts(in: window)
                ?? (opened.isEmpty ? "the relay saw no connection attempt \(describe(window))"
                    : growth != nil && opened.count < 3 ? "fewer than three attempts: no two gaps to compare" : nil)
        case .httpRequests(let filter, let range, let interval):
            judgeHTTPRequests(filter, range, minimumInterval: interval, into: &verdict)
        case .httpResponses(let filter, let range):
            judgeHTTPResponses(filter, range, into: &verdict)
        case .bytes(let direction, let window, let range):
            var total = 0
            for event in observations.events where window.contains(event.time) {
                if case .bytes(let d, let count) = event.kind, direction == nil || d == direction { total += count }
            }
            verdict.expected = "\(range.of("byte")) \(direction.map { $0 == .up ? "up (client → server)" : "down (server → client)" } ?? "in both directions") \(describe(window))"
            verdict.actual = "\(total) bytes crossed the relay"
            verdict.passed = range.contains(total)
            verdict.focus = window.from?.nanoseconds
        default:
            verdict.expected = "a check that applies to the relay"
            verdict.actual = "not applicable"
        }
        // A failed `min` says it too (QA 64: it got the note for a window's end instead).
        if verdict.note == nil, let from = check.relayWindow?.from, from.nanoseconds >= observations.ended {
            verdict.note = "the run ended at \(formatNanoseconds(observations.ended)), before this window began at \(from.compactDescription): nothing the relay saw could count"
        } else if verdict.note == nil, let to = check.relayWindow?.to, to.nanoseconds > observations.ended {
            // QA 61: a window past the run's end was counted to the end without a word.
            verdict.note = "the run ended at \(formatNanoseconds(observations.ended)), before this window's end at \(to.compactDescription): what the relay saw up to then was counted"
        }
    }

    /// Where a count check's timeline is shown (QA 64: the first event, or the window's start,
    /// whatever failed): past a `max`, the first one too many; short of a `min`, after the last
    /// one seen (where the next was awaited), or the window's start; otherwise the start.
    static func focus(on times: [Int64], range: CountRange, from start: Int64?) -> Int64? {
        if let maximum = range.maximum, times.count > maximum { return times[maximum] }
        if let minimum = range.minimum, times.count < minimum { return times.last ?? start }
        return start ?? times.first
    }

    private func openedTimes(in window: TimeWindow) -> [Int64] {
        observations.events.compactMap { event in
            if case .opened = event.kind, window.contains(event.time) { return event.time }
            return nil
        }
    }

    private func times(_ times: [Int64]) -> String {
        guard !times.isEmpty else { return "" }
        let shown = times.prefix(12).map { formatNanoseconds($0) }.joined(separator: ", ")
        return " (at \(shown)\(times.count > 12 ? ", …" : ""))"
    }

    func describe(_ window: TimeWindow) -> String {
        switch (window.from, window.to) {
        case let (from?, to?): "from \(from.compactDescription) to \(to.compactDescription)"
        case let (from?, nil): "from \(from.compactDescription) on"
        case let (nil, to?): "before \(to.compactDescription)"
        case (nil, nil): "during the run"
        }
    }
}

func formatRatio(_ value: Double) -> String {
    value == value.rounded() ? String(Int(value)) : String(format3Decimals: value)
}

extension String {
    init(format3Decimals value: Double) {
        var text = String((value * 1000).rounded() / 1000)
        while text.hasSuffix("0") && text.contains(".") { text.removeLast() }
        self = text
    }
}

private extension Check {
    /// The scenario-time window a relay check counts in (nil for other checks).
    var relayWindow: TimeWindow? {
        switch self {
        case .newConnections(let window, _), .attempts(let window, _, _), .bytes(_, let window, _): window
        case .httpRequests(let filter, _, _): filter.window
        case .httpResponses(let filter, _): filter.window
        default: nil
        }
    }
}
