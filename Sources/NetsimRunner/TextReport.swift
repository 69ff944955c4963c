import Foundation
import NetsimCore
import NetsimScenario

/// The verdicts as a person reads them: each failed check with what was expected, what
/// happened, the scenario line, and the slice of the timeline around it.
public enum TextReport {
    public static func render(_ result: RunResult, color: Bool = false) -> String {
        var lines: [String] = []
        let pass = color ? "\u{1B}[32m✔\u{1B}[0m" : "✔"
        let fail = color ? "\u{1B}[31m✘\u{1B}[0m" : "✘"
        var shownSlices: Set<[String]> = []
        for verdict in result.verdicts {
            let policy = verdict.expectation.judges == .policy ? " [app policy]" : ""
            lines.append("\(verdict.passed ? pass : fail) \(verdict.title)\(policy)")
            if verdict.passed, let note = verdict.note {
                lines.append("    but: " + note.replacingOccurrences(of: "\n", with: "\n         "))
            }
            guard !verdict.passed else { continue }
            lines.append("    expected: \(verdict.expected)")
            lines.append("    happened: " + verdict.actual.replacingOccurrences(of: "\n", with: "\n              "))
            // What qualifies it (the run ended before the window began, attempts the kernel refused):
            // it was shown under passes only (QA 64).
            if let note = verdict.note { lines.append("    note: " + note.replacingOccurrences(of: "\n", with: "\n          ")) }
            lines += sourceExcerpt(verdict.check.location, in: result.scenario).map { "    " + $0 }
            if let focus = verdict.focus {
                lines += TimelineText.excerpt(result.events, around: focus, shown: &shownSlices)
            }
        }
        // A fault the checks never saw act: a pass says less than it seems.
        let idle = result.faultsThatNeverActed
        if !idle.isEmpty {
            lines.append("note: \(idle.count == 1 ? "fault" : "faults") \(idle.joined(separator: ", ")) never acted in this run, so no check saw \(idle.count == 1 ? "it" : "them") (see the timeline)")
        }
        // A client that took a certificate it must refuse (`bad-cert`) is named whatever the checks say.
        for finding in result.securityFindings {
            lines.append((color ? "\u{1B}[31m⚠\u{1B}[0m " : "⚠ ") + finding)
        }
        let failed = result.failures.count
        let summary = failed == 0
            ? "PASS \(result.scenario.name): \(result.verdicts.count) check\(result.verdicts.count == 1 ? "" : "s") passed (\(result.driverName), \(formatNanoseconds(result.duration)))"
            : "FAIL \(result.scenario.name): \(failed) of \(result.verdicts.count) check\(result.verdicts.count == 1 ? "" : "s") failed\(Self.policyNote(result)) (\(result.driverName), \(formatNanoseconds(result.duration)))"
        lines.append(summary)
        if failed > 0, !result.clientLog.isEmpty {
            lines.append("client log (last lines):")
            // Blank lines inside stay (a log's own spacing); the one its final newline leaves does not.
            var log = result.clientLog.split(separator: "\n", omittingEmptySubsequences: false)
            while log.last?.isEmpty == true { log.removeLast() }
            lines += log.suffix(15).map { "  | " + $0 }
        }
        return lines.joined(separator: "\n")
    }

    /// `, all of them app policy: the library's own behaviour passed` when only policy checks
    /// failed; `, 1 of them app policy` when some did (docs/scenario-format.md, `judges`).
    static func policyNote(_ result: RunResult) -> String {
        let policy = result.failures.filter { $0.expectation.judges == .policy }.count
        if policy == 0 { return "" }
        if policy == result.failures.count { return ", all of them app policy: the library's own behaviour passed" }
        return ", \(policy) of them app policy"
    }

    /// `at FILE:LINE:COL`, the line, and a caret under the column.
    static func sourceExcerpt(_ location: SourceLocation, in scenario: Scenario) -> [String] {
        var lines = ["at \(location)"]
        guard location.line >= 1, location.line <= scenario.sourceLines.count else { return lines }
        let number = String(location.line)
        lines.append("\(number) | \(scenario.sourceLines[location.line - 1])")
        lines.append(String(repeating: " ", count: number.count) + " | " + String(repeating: " ", count: max(0, location.column - 1)) + "^")
        return lines
    }
}

/// Events as short human lines: `  4.012s  #3  opened from 127.0.0.1:5555`.
enum TimelineText {
    /// The timeline under a failed check at `focus`, indented: its slice, or one line saying
    /// "as above" when the same lines were shown already (`shown`), or nothing when the slice
    /// is empty. Each slice once: four failed checks on one request printed the same 18 lines
    /// four times, and checks whose moments differ by a millisecond the same lines twice; an
    /// empty slice (a window after the run) printed a bare heading (QA 64).
    static func excerpt(_ events: [Event], around focus: Int64, shown: inout Set<[String]>) -> [String] {
        let slice = slice(events, around: focus)
        if shown.contains(slice) { return ["    timeline around \(formatNanoseconds(focus)): as above"] }
        guard !slice.isEmpty else { return [] }
        shown.insert(slice)
        return ["    timeline around \(formatNanoseconds(focus)):"] + slice.map { "      " + $0 }
    }

    static func slice(_ events: [Event], around focus: Int64, before: Int64 = 1_500_000_000, after: Int64 = 1_500_000_000, limit: Int = 18) -> [String] {
        let window = events.filter { $0.time >= focus - before && $0.time <= focus + after && !isNoise($0) }
        // Keep the events nearest the focus when there are too many.
        let nearest = window.sorted { abs($0.time - focus) < abs($1.time - focus) }.prefix(limit)
        let shown = window.filter { event in nearest.contains(event) }
        return shown.map(line)
    }

    /// Byte batches are many and rarely what a person needs in an excerpt.
    static func isNoise(_ event: Event) -> Bool {
        if case .bytes = event.kind { return true }
        return false
    }

    static func line(_ event: Event) -> String {
        let time = formatSeconds(event.time)
        let connection = event.connection.map { "\($0)" } ?? ""
        return time + "  " + connection.padding(toLength: 4, withPad: " ", startingAt: 0) + "  " + text(event.kind)
    }

    static func formatSeconds(_ ns: Int64) -> String {
        // Integer division truncates toward zero: −0.5 s has 0 whole seconds, so the sign is
        // written on its own, never lost.
        // Rounded to the millisecond, as the live lines round it (QA 64: 2.358s there, 2.357s here).
        let ms = (abs(ns) + 500_000) / 1_000_000
        let text = (ns < 0 && ms > 0 ? "-" : "") + "\(ms / 1000).\(String(format: "%03d", Int(ms % 1000)))s"  // no -0.000s
        return String(repeating: " ", count: max(0, 8 - text.count)) + text
    }

    static func text(_ kind: EventKind) -> String {
        switch kind {
        case .seed(let seed): "seed \(seed)"
        case .listening(let address): "relay listening on \(address)"
        case .listenerClosed(let reason): "listener closed: \(reason)"
        case .listenerPaused(let reason): "listener paused: \(reason)"
        case .listenerResumed(let reason): "listener resumed: \(reason)"
        case .opened(let client): "opened from \(client?.description ?? "an unknown address")"
        case .upstreamConnected(_, let after): "upstream connected (\(formatNanoseconds(after)))"
        case .upstreamFailed(let reason, let detail): "upstream failed: \(reason.rawValue) (\(detail))"
        case .bytes(let direction, let count): "\(count) bytes \(direction.rawValue)"
        case .dropped(let direction, let count, let fault): "\(count) bytes \(direction.rawValue) dropped (\(fault))"
        case .halfClosed(let side): "FIN from \(side.rawValue)"
        case .faultAdded(_, let rule): "fault added: \(rule)"
        case .faultFired(let fault, let detail): "\(fault): \(detail)"
        case .faultLifted(let fault, let cutShort): "fault lifted: \(fault)" + (cutShort.map { " (\($0))" } ?? "")
        case .linkChanged(let description): "link: \(description)"
        case .requestStarted(let name, let index, let method, let path): "→ \(name) #\(index + 1) \(method) \(path)"
        case .requestFinished(let name, let index, let status, let error, let port):
            "← \(name) #\(index + 1) " + (error ?? status.map { String($0) } ?? "?") + (port.map { " (client port \($0))" } ?? "")
        case .step(let description): "step: \(description)"
        case .httpRequest(let method, let path, let reused, let answeredBy, let tag, _, _):
            "HTTP \(method) \(path)" + (tag.map { " [\($0)]" } ?? "") + (reused ? " (reused connection)" : " (new connection)") + (answeredBy.map { ", answered by the \($0) fault" } ?? "")
        case .httpResponse(let status, let bytes, let answeredBy, _):
            "HTTP \(status) (\(bytes) body bytes)" + (answeredBy.map { ", from the \($0) fault" } ?? "")
        case .httpUnobserved(let reason): "HTTP observation stopped: \(reason)"
        case .path(let path): "forwarding path: \(path)"
        case .closed(let by, let how, let up, let down): "closed by \(by.rawValue) with \(how.rawValue.uppercased()) (\(up) up, \(down) down)"
        case .dnsQuery(let name, let type, let transport): "DNS \(type) \(name)? (\(transport))"
        case .dnsAnswer(let name, let type, let result, let after): "DNS \(type) \(name): \(result) (\(formatNanoseconds(after)))"
        }
    }
}
