import Foundation
import NetsimCore
import NetsimScenario

/// The relay's `requests:` and `responses:` checks, over its `http_request` / `http_response`
/// events.
extension ExpectationJudge {
    /// One HTTP request or response the relay observed.
    struct HTTPSighting {
        var time: Int64
        var connection: ConnectionID?
        /// `POST /orders`, or `503`.
        var what: String
        /// nil: the upstream.
        var answeredBy: String?

        /// `GET /data at 1.203s on #3 (answered by outage)`: to the millisecond, so requests
        /// a few milliseconds apart (a retry loop's) can be told apart.
        var line: String {
            what + " at " + String(format: "%.3fs", Double(time) / 1e9) + (connection.map { " on \($0)" } ?? "")
                + (answeredBy.map { " (answered by \($0))" } ?? "")
        }
    }

    func judgeHTTPRequests(_ filter: HTTPRequestFilter, _ range: CountRange?, minimumInterval: Duration?, into verdict: inout CheckVerdict) {
        var all: [HTTPSighting] = []
        var matching: [HTTPSighting] = []
        for event in observations.events {
            guard case .httpRequest(let method, let path, _, let answeredBy, _, _, _) = event.kind else { continue }
            let sighting = HTTPSighting(time: event.time, connection: event.connection, what: "\(method) \(path)", answeredBy: answeredBy)
            all.append(sighting)
            if (filter.method.map { $0 == method } ?? true), (filter.path.map { $0.matches(path) } ?? true),
               filter.answeredBy.matches(answeredBy), filter.window.contains(event.time) {
                matching.append(sighting)
            }
        }
        matching.sort { $0.time < $1.time }
        let phrase = Self.describe(filter)
        var wants = (range?.of("request") ?? "requests") + (phrase.isEmpty ? "" : " \(phrase)") + " \(describe(filter.window))"
        if let minimumInterval { wants += ", each at least \(minimumInterval.compactDescription) after the one before" }
        verdict.expected = wants
        var actual = sightings(matching, among: all, noun: "requests")
        var passed = range?.contains(matching.count) ?? true
        verdict.focus = range.flatMap { Self.focus(on: matching.map(\.time), range: $0, from: filter.window.from?.nanoseconds) }
            ?? matching.first?.time ?? filter.window.from?.nanoseconds

        if let minimumInterval {
            if matching.count < 2 {
                actual += "\nfewer than two, so there is no gap to measure"
            } else {
                let gaps = zip(matching, matching.dropFirst()).map { (earlier: $0, later: $1, gap: $1.time - $0.time) }
                let shortest = gaps.min { $0.gap < $1.gap }!
                let short = gaps.filter { $0.gap < minimumInterval.nanoseconds }.count
                actual += "\nthe shortest gap was \(formatNanoseconds(shortest.gap)): \(shortest.earlier.line), then \(shortest.later.line)"
                if short > 0 {
                    passed = false
                    actual += "\n\(short) of \(gaps.count) gaps were shorter than \(minimumInterval.compactDescription)"
                    verdict.focus = shortest.earlier.time
                }
            }
        }
        verdict.actual = actual
        verdict.passed = passed
        if all.isEmpty { verdict.note = actual }
    }

    func judgeHTTPResponses(_ filter: HTTPResponseFilter, _ range: CountRange, into verdict: inout CheckVerdict) {
        var all: [HTTPSighting] = []
        var matching: [HTTPSighting] = []
        for event in observations.events {
            guard case .httpResponse(let status, _, let answeredBy, _) = event.kind else { continue }
            let sighting = HTTPSighting(time: event.time, connection: event.connection, what: String(status), answeredBy: answeredBy)
            all.append(sighting)
            if (filter.status.map { $0 == status } ?? true), filter.answeredBy.matches(answeredBy), filter.window.contains(event.time) {
                matching.append(sighting)
            }
        }
        matching.sort { $0.time < $1.time }
        let phrase = Self.describe(filter)
        verdict.expected = range.of("response") + (phrase.isEmpty ? "" : " \(phrase)") + " \(describe(filter.window))"
        verdict.actual = sightings(matching, among: all, noun: "responses")
        verdict.passed = range.contains(matching.count)
        if all.isEmpty { verdict.note = verdict.actual }
        verdict.focus = Self.focus(on: matching.map(\.time), range: range, from: filter.window.from?.nanoseconds)
    }

    /// `the relay saw 2: …` with up to five of them; with none, what it saw instead (so a wrong
    /// filter shows), or why it saw no HTTP at all.
    private func sightings(_ matching: [HTTPSighting], among all: [HTTPSighting], noun: String) -> String {
        if !matching.isEmpty {
            return "the relay saw \(matching.count): " + listed(matching)
        }
        if !all.isEmpty {
            return "the relay saw none of those; the \(all.count) HTTP \(noun) it saw: " + listed(all.sorted { $0.time < $1.time })
        }
        let unobserved = observations.events.compactMap { event -> String? in
            guard case .httpUnobserved(let reason) = event.kind else { return nil }
            return (event.connection.map { "\($0): " } ?? "") + reason
        }
        return "the relay saw no HTTP \(noun) at all"
            + (unobserved.isEmpty ? "" : "; it stopped observing HTTP on \(unobserved.count) connection\(unobserved.count == 1 ? "" : "s"): " + unobserved.prefix(3).joined(separator: "; "))
    }

    private func listed(_ sightings: [HTTPSighting]) -> String {
        sightings.prefix(5).map(\.line).joined(separator: ", ") + (sightings.count > 5 ? ", … and \(sightings.count - 5) more" : "")
    }

    // MARK: Titles

    /// `POST /orders answered by upstream`; empty for every request.
    static func describe(_ filter: HTTPRequestFilter) -> String {
        [filter.method, filter.path?.description, describe(filter.answeredBy)].compactMap { $0 }.joined(separator: " ")
    }

    /// `503 answered by outage`; empty for every response.
    static func describe(_ filter: HTTPResponseFilter) -> String {
        [filter.status.map(String.init), describe(filter.answeredBy)].compactMap { $0 }.joined(separator: " ")
    }

    static func describe(_ answerer: Answerer) -> String? {
        switch answerer {
        case .any: nil
        case .upstream: "answered by upstream"
        case .relay: "answered by the relay"
        case .fault(let name): "answered by \(name)"
        }
    }
}
