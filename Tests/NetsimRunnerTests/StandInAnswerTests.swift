import Foundation
import NetsimCore
import NetsimScenario
import Testing
@testable import NetsimRunner

/// What netsim answers in an exec client's place (it crashed, never answered) is not the
/// client's own classification: no request check passes on it. A crashed client's requests
/// passed `error: other`, `error: any` and `within`, and the run passed with no request sent.
@Suite("netsim's stand-in answers pass no check")
struct StandInAnswerTests {
    @Test func aCrashedClientsRequestsPassNoErrorOrTimeCheck() async throws {
        let result = try await run(scenario("""
            name: crashed
            description: the client crashes on its first request
            upstream:
              routes:
                - path: /g
                  body: g
            client:
              driver: exec
              command: [python3, Fixtures/clients/crashing_client.py]
              timeout: 2s
            timeline:
              - request: g
                path: /g
                count: 2
            expect:
              - request: g
                error: other
              - request: g
                error: any
              - request: g
                within: 5s
              - request: g
                requests: 2
            """))
        #expect(result.outcomes.count == 2 && result.outcomes.allSatisfy { $0.response.error == .other }, "\(result.outcomes.map(\.summary))")
        for title in ["request g: error other", "request g: error any", "request g: within 5s"] {
            let verdict = try #require(result.verdict(title), "\(result.verdicts.map(\.title))")
            #expect(!verdict.passed, "\(title): \(verdict.actual)")
            #expect(verdict.actual.contains("the client gave no answer of its own; netsim's stand-in: other after"), "\(verdict.actual)")
            #expect(verdict.actual.contains("the exec client exited before answering") || verdict.actual.contains("the exec client has exited"), "\(verdict.actual)")
        }
        #expect(result.verdicts.first { $0.title.hasPrefix("request g: requests") }?.passed == true, "the requests did run: \(result.verdicts.map(\.title))")
        #expect(!result.passed)
    }
}

/// A relay check that passed on nothing it could see says so under its ✔: the relay saw no
/// HTTP at all, or its listener was closed (`refuse`) and the kernel refused the attempts. Only
/// `--json`'s `actual` said so; the text showed a bare pass.
@Suite("passes on nothing seen are marked")
struct UnseenPassTests {
    @Test func aRelayCheckThatSawNothingSaysSoUnderItsPass() async throws {
        // The relay refuses every connection, so it sees neither HTTP nor attempts.
        let result = try await run(scenario(oneRequestScenario("unseen", timeline: """
              - fault: refuse
              - request: a
                path: /a
                count: 3
            """, expect: """
              - request: a
                error: refused
              - relay:
                  responses: { max: 0 }
              - relay:
                  attempts: { max_per_second: 1 }
            """)))
        let responses = try #require(result.verdicts.first { $0.title.hasPrefix("relay: responses") }, "\(result.verdicts.map(\.title))")
        #expect(responses.passed && responses.note?.hasPrefix("the relay saw no HTTP responses at all") == true, "\(responses.note ?? "no note")")
        let attempts = try #require(result.verdict("relay: connection attempts"))
        #expect(attempts.passed, "\(attempts.actual)")
        #expect(attempts.note?.contains("the relay's listener was closed (refuse) from ") == true, "\(attempts.note ?? "no note")")
        let text = TextReport.render(result)
        #expect(text.contains("✔ relay: connection attempts\n    but: the relay's listener was closed (refuse)"), "\(text)")
        // A check that saw what it judges carries no note.
        #expect(result.verdict("request a: error refused")?.note == nil)
    }

    /// A `min` over a window after the run's end fails, and says why under the failure, in the
    /// text report (QA 64: it got the note for a window's end, and the text showed none, nor the
    /// HTML page), once per moment of the timeline.
    @Test func aFailedWindowAfterTheRunsEndSaysWhy() async throws {
        let result = try await run(scenario(oneRequestScenario("late-window-min", expect: """
              - request: a
                status: 404
                error: any
              - relay:
                  new_connections: { from: 60s, min: 1 }
            """)))
        let verdict = try #require(result.verdicts.first { $0.title.hasPrefix("relay: new connections") })
        #expect(!verdict.passed)
        #expect(verdict.note?.hasSuffix("before this window began at 60s: nothing the relay saw could count") == true, "\(verdict.note ?? "no note")")
        let text = TextReport.render(result)
        #expect(text.contains("    note: the run ended at "), "\(text)")
        #expect(!text.contains("timeline around 60s"), "an empty slice has no heading: \(text)")
        // The two failed checks on request a share their moment: its slice is shown once.
        #expect(text.components(separatedBy: ": as above").count - 1 == 1, "\(text)")
        #expect(HTMLReport.render(result).contains("nothing the relay saw could count"))
    }

    /// Two failed checks whose moments differ (the answer's end, the step's start) over a run so
    /// short that their slices hold the same events: the lines are shown once (QA 64: a JUnit
    /// failure repeated 18 lines for moments a millisecond apart). On events of the test's own
    /// making: a real run's timing decides whether two moments see the same lines.
    @Test func theSameSliceAtAnotherMomentIsShownOnce() {
        let events = [
            Event(time: 0, connection: nil, kind: .step(description: "request a: GET /a")),
            Event(time: 3_000_000, connection: ConnectionID(1), kind: .opened(client: nil)),
            Event(time: 5_000_000, connection: ConnectionID(1), kind: .closed(by: .client, how: .fin, upBytes: 95, downBytes: 76)),
        ]
        var shown: Set<[String]> = []
        let first = TimelineText.excerpt(events, around: 5_500_000, shown: &shown)
        let second = TimelineText.excerpt(events, around: 433_000, shown: &shown)
        #expect(first.count == 4 && first[0] == "    timeline around 5.5ms:", "\(first)")
        #expect(second == ["    timeline around 433us: as above"], "\(second)")
        // Other lines at another moment are shown whole; no lines, no heading.
        let later = TimelineText.excerpt(events + [Event(time: 1_400_000_000, connection: nil, kind: .step(description: "wait 1s"))], around: 1_000_000_000, shown: &shown)
        #expect(later.count == 5, "\(later)")
        #expect(TimelineText.excerpt(events, around: 60_000_000_000, shown: &shown).isEmpty)
    }

    /// A window that begins after the run has ended counts nothing, so its `max` passes on
    /// nothing (`from: 60s` in a run of a second: a typo, or a timeline that got shorter); one
    /// that ends after it is counted to the run's end, and says so.
    @Test func aWindowAfterTheRunsEndSaysSoUnderItsPass() async throws {
        let result = try await run(scenario(oneRequestScenario("late-window", expect: """
              - request: a
                status: 200
              - relay:
                  new_connections: { from: 60s, max: 0 }
                  bytes: { from: 1m, max: 0 }
              - relay:
                  new_connections: { to: 60s, max: 1 }
            """)))
        #expect(result.passed, "\(TextReport.render(result))")
        let late = result.verdicts.filter { $0.check.check.isRelayWindowFrom60 }
        #expect(late.count == 2)
        for verdict in late {
            #expect(verdict.note?.hasPrefix("the run ended at ") == true && verdict.note?.hasSuffix("before this window began at 60s: nothing the relay saw could count") == true,
                    "\(verdict.title): \(verdict.note ?? "no note")")
        }
        // One that ends after the run did says the run's end was where counting stopped (QA 61).
        let pastTheEnd = try #require(result.verdict("relay: new connections at most 1"), "\(result.verdicts.map(\.title))")
        #expect(pastTheEnd.note?.hasPrefix("the run ended at ") == true && pastTheEnd.note?.hasSuffix("before this window's end at 60s: what the relay saw up to then was counted") == true,
                "\(pastTheEnd.note ?? "no note")")
    }
}

private extension Check {
    var isRelayWindowFrom60: Bool {
        switch self {
        case .newConnections(let window, _), .bytes(_, let window, _): window.from == .seconds(60)
        default: false
        }
    }
}
