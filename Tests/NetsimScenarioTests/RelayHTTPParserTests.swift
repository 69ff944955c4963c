import Foundation
import NetsimCore
import NetsimRoutes
import Testing
@testable import NetsimScenario

/// `requests:` / `responses:` inside `relay:`, and `message:` on request subjects.
@Suite("Scenario files: HTTP and error-message checks")
struct RelayHTTPParserTests {
    static let file = "Scenarios/http.scn"

    static let source = """
        name: http
        description: The relay's view of HTTP, and error messages.
        upstream:
          routes:
            - path: /orders
              method: POST
        client:
          driver: resilient
        timeline:
          - request: order
            method: POST
            path: /orders
        expect:
          - request: order
            message: { starts_with: "captive portal:" }
          - request: order
            message: refused
          - after: 0s
            message: { contains: "probe /generate_204" }
          - relay:
              requests: { method: POST, path: /orders, from: 2s, to: 9s, answered_by: upstream, count: 1 }
              responses: { status: 503, from: 1s, answered_by: outage, min: 1, max: 3 }
          - relay:
              requests: { path: /api/*, answered_by: relay, min: 2, min_interval: 1.5s }
              responses: 4
          - relay:
              requests: { min_interval: 250ms }
              responses: { max: 0, answered_by: portal }
          - relay:
              requests: 3

        """

    func parse() throws -> Scenario {
        try ScenarioParser.parse(source: Self.source, file: Self.file)
    }

    @Test func messageChecks() throws {
        let expectations = try parse().expectations
        #expect(expectations[0].checks == [
            LocatedCheck(.errorMessage(.startsWith("captive portal:")), location: NetsimScenario.SourceLocation(file: Self.file, line: 15, column: 5)),
        ])
        #expect(expectations[1].checks.map(\.check) == [.errorMessage(.contains("refused"))])
        #expect(expectations[2].subject == .requestsAfter(.zero))
        #expect(expectations[2].checks.map(\.check) == [.errorMessage(.contains("probe /generate_204"))])
    }

    @Test func requestsAndResponses() throws {
        let expectations = try parse().expectations
        #expect(expectations[3].checks == [
            LocatedCheck(
                .httpRequests(
                    HTTPRequestFilter(method: "POST", path: .exact("/orders"), window: TimeWindow(from: .seconds(2), to: .seconds(9)), answeredBy: .upstream),
                    .exactly(1), minimumInterval: nil),
                location: NetsimScenario.SourceLocation(file: Self.file, line: 21, column: 7)),
            LocatedCheck(
                .httpResponses(HTTPResponseFilter(status: 503, window: TimeWindow(from: .seconds(1)), answeredBy: .fault("outage")), CountRange(minimum: 1, maximum: 3)),
                location: NetsimScenario.SourceLocation(file: Self.file, line: 22, column: 7)),
        ])
        #expect(expectations[4].checks.map(\.check) == [
            .httpRequests(HTTPRequestFilter(path: .prefix("/api/"), answeredBy: .relay), CountRange(minimum: 2), minimumInterval: .milliseconds(1500)),
            .httpResponses(HTTPResponseFilter(), .exactly(4)),
        ])
        #expect(expectations[5].checks.map(\.check) == [
            .httpRequests(HTTPRequestFilter(), nil, minimumInterval: .milliseconds(250)),
            .httpResponses(HTTPResponseFilter(answeredBy: .fault("portal")), CountRange(maximum: 0)),
        ])
        #expect(expectations[6].checks.map(\.check) == [.httpRequests(HTTPRequestFilter(), .exactly(3), minimumInterval: nil)])
    }

    @Test func pathPatterns() {
        #expect(PathPattern("/api/*") == .prefix("/api/"))
        #expect(PathPattern("/api/*").matches("/api/v1/orders?id=2"))
        #expect(!PathPattern("/api/*").matches("/api"))
        #expect(PathPattern("/*").matches("/"))
        #expect(PathPattern("/orders").matches("/orders"))
        #expect(!PathPattern("/orders").matches("/orders?id=1"), "exact means the whole request target, query included")
        #expect(PathPattern("/a*b").description == "/a*b" && PathPattern("/a*b") == .exact("/a*b"))
    }

    @Test func answerers() {
        #expect(Answerer.any.matches(nil) && Answerer.any.matches("outage"))
        #expect(Answerer.upstream.matches(nil) && !Answerer.upstream.matches("portal"))
        #expect(Answerer.relay.matches("portal") && !Answerer.relay.matches(nil))
        #expect(Answerer.fault("outage").matches("outage") && !Answerer.fault("outage").matches("portal"))
    }

    /// A count says its noun in the singular where the bound is one ("exactly 1 requests" was
    /// printed before).
    @Test func aCountWithItsNoun() {
        #expect(CountRange.exactly(1).of("request") == "exactly 1 request")
        #expect(CountRange.exactly(2).of("request") == "exactly 2 requests")
        #expect(CountRange.exactly(0).of("new connection") == "exactly 0 new connections")
        #expect(CountRange(minimum: 1).of("response") == "at least 1 response")
        #expect(CountRange(maximum: 1).of("byte") == "at most 1 byte")
        #expect(CountRange(minimum: 1, maximum: 3).of("request") == "between 1 and 3 requests")
        #expect(CountRange().of("request") == "any number of requests")
        #expect(CountRange(minimum: 2).of("attempt", plural: "attempts") == "at least 2 attempts")
    }

    /// Spaces and tabs around a header's value are not part of it: clients that keep a trailing
    /// one and clients that trim it get the same verdict.
    @Test func headerValuesAreComparedWithoutSurroundingWhitespace() {
        let kept = [HTTPHeader("X-Space", "padded  "), HTTPHeader("x-space", "\tsecond")]
        #expect(HeaderCheck.value(of: "x-SPACE", in: kept) == "padded, second")
        #expect(HeaderCheck(name: "X-Space", .equals("padded, second")).holds(in: kept))
        #expect(HeaderCheck(name: "X-Space", .equals(" padded, second ")).holds(in: kept))
        #expect(!HeaderCheck(name: "X-Space", .equals("padded")).holds(in: kept))
        #expect(HeaderCheck(name: "X-None", .present(false)).holds(in: kept))
        #expect(!HeaderCheck(name: "x-space", .present(false)).holds(in: kept))
    }
}
