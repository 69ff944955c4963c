import Foundation
import NetsimCore
import NetsimRunner
import NetsimScenario
import Testing

/// Real runs (built-in server, relay, a reference driver) judged by the relay's `requests:` /
/// `responses:` checks and by `message:`: each check is shown holding and failing.
@Suite("HTTP the relay observed, and error messages", .serialized)
struct RelayHTTPExpectationTests {
    /// A POST, an upstream 503, two requests three seconds apart, two back to back, and one
    /// request the `outage` fault answers instead of the upstream. The windows leave 1.5 s or
    /// more of margin: the run is real time, and while a parallel `swift test` starts every suite
    /// at once (processes, tshark) a 2-core machine delays a step by up to ~1.4 s, measured.
    static let traffic = """
        name: relay-http
        description: what the relay saw of HTTP, checked both ways
        seed: 5
        upstream:
          routes:
            - path: /orders
              method: POST
              status: 201
              body: created
            - path: /hello
              body: hello
            - path: /busy
              status: 503
              body: busy
        client:
          driver: naive
          timeout: 2s
          retries: 0
        timeline:
          - at: 0s
            request: order
            method: POST
            path: /orders
            body: '{"n":1}'
          - request: busy
            path: /busy
          - at: 4s
            request: spaced
            path: /hello
          - at: 7s
            request: spaced-again
            path: /hello
          - at: 10s
            request: burst
            path: /hello
            count: 2
          - at: 13s
            fault: outage=503
            name: down
          - request: during
            path: /hello
          - clear: down
        expect:
          - relay:
              requests: { method: POST, path: /orders, count: 1 }
          - relay:
              requests: { method: POST, path: /orders, count: 2 }
          - relay:
              requests: { path: /hello, answered_by: outage, count: 1 }
          - relay:
              requests: { path: /hello, answered_by: upstream, count: 4 }
          - relay:
              requests: { path: /hello, answered_by: outage, to: 13s, min: 1 }
          - relay:
              requests: { method: POST, answered_by: relay, max: 0 }
          - relay:
              requests: { path: /hel*, from: 3500ms, to: 9500ms, min_interval: 1500ms }
          - relay:
              requests: { path: /hel*, from: 9500ms, to: 13s, min_interval: 500ms }
          - relay:
              responses: { status: 503, count: 2 }
          - relay:
              responses: { status: 503, answered_by: outage, count: 1 }
          - relay:
              responses: { status: 503, answered_by: upstream, count: 2 }
          - relay:
              responses: { status: 201, from: 3500ms, min: 1 }
        """

    @Test func requestsAndResponsesPassAndFail() async throws {
        let result = try await run(try scenario(Self.traffic))
        let expected: [(String, Bool)] = [
            ("relay: requests POST /orders: exactly 1", true),
            ("relay: requests POST /orders: exactly 2", false),
            ("relay: requests /hello answered by outage: exactly 1", true),  // the relay answered it
            ("relay: requests /hello answered by upstream: exactly 4", true),  // spaced ×2, burst ×2
            ("relay: requests /hello answered by outage: at least 1", false),  // the outage began at 13 s
            ("relay: requests POST answered by the relay: at most 0", true),
            ("relay: requests /hel*: each at least 1.5s after the one before", true),  // ~3 s apart
            ("relay: requests /hel*: each at least 500ms after the one before", false),  // back to back
            ("relay: responses 503: exactly 2", true),  // /busy from upstream, /hello from the outage
            ("relay: responses 503 answered by outage: exactly 1", true),
            ("relay: responses 503 answered by upstream: exactly 2", false),
            ("relay: responses 201: at least 1", false),  // the only 201 came before 3.5 s
        ]
        for (title, passes) in expected {
            let verdict = result.verdict(title)
            #expect(verdict != nil, "no verdict titled \(title); have: \(result.verdicts.map(\.title))")
            #expect(verdict?.passed == passes, "\(title): \(verdict?.expected ?? "") / \(verdict?.actual ?? "")")
        }
        #expect(result.verdicts.count == expected.count)

        // The diagnostics name the requests: method, target, time, connection, who answered.
        let twoOrders = try #require(result.verdict("relay: requests POST /orders: exactly 2"))
        #expect(twoOrders.expected == "exactly 2 requests POST /orders during the run")
        #expect(try Regex(#"^the relay saw 1: POST /orders at \d+\.\d\d\ds on #\d+$"#).wholeMatch(in: twoOrders.actual) != nil, "\(twoOrders.actual)")
        #expect(twoOrders.focus != nil)
        let early = try #require(result.verdict("relay: requests /hello answered by outage: at least 1"))
        #expect(early.actual.hasPrefix("the relay saw none of those; the 7 HTTP requests it saw: POST /orders at "), "\(early.actual)")
        #expect(early.actual.hasSuffix(", … and 2 more"), "\(early.actual)")
        let outage = try #require(result.verdict("relay: responses 503 answered by upstream: exactly 2"))
        #expect(outage.actual.hasPrefix("the relay saw 1: 503 at "), "\(outage.actual)")
        let answered = try #require(result.verdict("relay: requests /hello answered by outage: exactly 1"))
        #expect(try Regex(#"^the relay saw 1: GET /hello at \d+\.\d\d\ds on #\d+ \(answered by outage\)$"#).wholeMatch(in: answered.actual) != nil, "\(answered.actual)")

        // min_interval names the shortest gap with both requests' times and connections.
        let spaced = try #require(result.verdict("relay: requests /hel*: each at least 1.5s after the one before"))
        #expect(spaced.actual.contains("the shortest gap was "), "\(spaced.actual)")
        let burst = try #require(result.verdict("relay: requests /hel*: each at least 500ms after the one before"))
        let shortest = try #require(burst.actual.split(separator: "\n").first { $0.hasPrefix("the shortest gap was ") })
        #expect(try Regex(#"^the shortest gap was \S+: GET /hello at \d+\.\d\d\ds on #\d+, then GET /hello at \d+\.\d\d\ds on #\d+$"#).wholeMatch(in: String(shortest)) != nil, "\(shortest)")
        #expect(burst.actual.hasSuffix("1 of 1 gaps were shorter than 500ms"), "\(burst.actual)")
        #expect((burst.focus ?? 0) >= 9_500_000_000, "the report shows the timeline around the burst")
        #expect(!result.passed)
    }

    /// The resilient driver reports a captive portal (`captive portal: probe …`) when a
    /// connectivity probe is answered with a login page; a refused connect has another message.
    static let messages = """
        name: messages
        description: error messages checked both ways
        seed: 2
        upstream:
          routes:
            - path: /hotspot-detect.html
              body: "<html>Log in to the hotel Wi-Fi</html>"
            - path: /hello
              body: hello
        client:
          driver: resilient
          timeout: 2s
          retries: 0
        timeline:
          - request: probe
            path: /hotspot-detect.html
          - request: hello
            path: /hello
          - fault: rst
            target: existing
          - fault: refuse
            name: down
          - wait: 100ms
          - request: refused
            path: /hello
          - clear: down
        expect:
          - request: probe
            message: { starts_with: "captive portal:" }
          - request: probe
            message: "probe /hotspot-detect.html"
          - request: hello
            message: { starts_with: "captive portal:" }
          - request: refused
            message: { starts_with: "captive portal:" }
          - request: refused
            error: refused
          - request: refused
            message: refused
        """

    @Test func messagePassesAndFails() async throws {
        let result = try await run(try scenario(Self.messages))
        let expected: [(String, Bool)] = [
            ("request probe: message starts with \"captive portal:\"", true),
            ("request probe: message contains \"probe /hotspot-detect.html\"", true),
            ("request hello: message starts with \"captive portal:\"", false),  // it succeeded
            ("request refused: message starts with \"captive portal:\"", false),  // another message
            ("request refused: error refused", true),
            ("request refused: message contains \"refused\"", true),  // "… Connection refused …"
        ]
        for (title, passes) in expected {
            let verdict = result.verdict(title)
            #expect(verdict != nil, "no verdict titled \(title); have: \(result.verdicts.map(\.title))")
            #expect(verdict?.passed == passes, "\(title): \(verdict?.expected ?? "") / \(verdict?.actual ?? "")")
        }
        let success = try #require(result.verdict("request hello: message starts with \"captive portal:\""))
        #expect(success.expected == "an error message that starts with \"captive portal:\"")
        #expect(success.actual.hasPrefix("1 of 1 did not:\nhello #1: it succeeded with status 200 in "), "\(success.actual)")
        #expect(success.actual.hasSuffix("so there is no error message"), "\(success.actual)")
        let other = try #require(result.verdict("request refused: message starts with \"captive portal:\""))
        #expect(other.actual.contains("refused #1: it failed (refused after "), "\(other.actual)")
        #expect(other.actual.contains(" with the message \""), "\(other.actual)")
        #expect(other.focus != nil)
    }

    /// A failed request check shows the timeline around its answer, where the check was decided,
    /// not around the request's start (a slow answer's start is seconds before anything failed).
    @Test func aFailedRequestCheckFocusesOnTheAnswer() async throws {
        let result = try await run(try scenario("""
            name: focus
            description: the report's timeline slice is around the answer
            upstream:
              routes:
                - path: /slow
                  body: late
                  delay: 2s
            client:
              driver: naive
              timeout: 5s
            timeline:
              - request: slow
                path: /slow
            expect:
              - request: slow
                status: 404
            """))
        let verdict = try #require(result.verdict("request slow: status 404"))
        let outcome = try #require(result.outcomes.first)
        #expect(!verdict.passed && outcome.duration >= 2_000_000_000)
        #expect(verdict.focus == outcome.finished, "focus \(verdict.focus ?? -1), answered at \(outcome.finished)")
    }
}
