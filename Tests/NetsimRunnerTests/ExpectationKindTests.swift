import Foundation
import NetsimCore
import NetsimHTTP
import NetsimRunner
import NetsimScenario
import Testing

/// One real run (built-in server, relay, the urllib3 exec client) judged by expectations of
/// every kind, some written to hold and some written to fail: each kind is shown able to fail.
@Suite("Every expectation kind can pass and can fail")
struct ExpectationKindTests {
    static let source = """
        name: kinds
        description: every expectation kind, holding and failing
        seed: 3
        upstream:
          routes:
            - path: /hello
              headers: { X-Served-By: edge-1 }
              body: hello world
            - path: /big
              body_bytes: 20000
            - path: /huge
              body_bytes: 70000
            - path: /slow
              delay: 400ms
              body: late
            - path: /order
              method: POST
              status: 201
              body: created
        client:
          driver: exec
          command: [python3, Fixtures/clients/urllib3_client.py]
          timeout: 3s
          pool: 2
          retries: 0
        timeline:
          - at: 0s
            request: hello
            path: /hello
            count: 2
            parallel: 2
          - request: big
            path: /big
          - request: huge
            path: /huge
          - request: slow
            path: /slow
          - request: order
            method: POST
            path: /order
            body: '{"n":1}'
          - request: missing
            path: /nowhere
          - fault: rst
            target: existing
          - wait: 300ms
          - request: fresh
            path: /hello
          - fault: rst
            target: existing
          - fault: refuse
            name: down
          - wait: 100ms
          - request: refused
            path: /hello
          - clear: down
          - wait: 100ms
          - request: again
            path: /hello
        expect:
          - request: hello
            status: 200
            body: hello world
            error: none
            within: 5s
            requests: 2
          - request: hello
            status: 404
            body: { contains: "nope" }
            error: any
          # A request step's own count is checked when the file is read; a time's requests run.
          - after: 0s
            requests: { min: 100 }
          - request: hello
            connection: reused
          - request: hello
            headers: { x-served-by: edge-1, Content-Length: { present: true }, Set-Cookie: { present: false } }
            body: { not_contains: "error" }
          - request: hello
            headers: { X-Served-By: { contains: edge-2 } }
            body: { not_contains: "world" }
          - request: refused
            headers: { Set-Cookie: { present: false } }
          - request: huge
            body: { not_contains: "not in there" }
          - request: again
            headers: { X-Served-By: { equals: edge-1 } }
          - request: big
            body: { sha256: "\(sha256Hex(BuiltinServer.generatedBody(bytes: 20000)))" }
          - request: big
            body: { sha256: "0000000000000000000000000000000000000000000000000000000000000000" }
          - request: slow
            within: 200ms
          - request: slow
            within: 5s
          - request: missing
            status: 404
          - request: fresh
            connection: new
          - request: fresh
            connection: reused
          - request: refused
            error: refused
          - request: refused
            error: timeout
          - request: refused
            error: none
          - request: refused
            connection: new
          - server: { method: POST, path: /order }
            count: 1
          - server: { path: /order }
            count: 2
          - server: {}
            count: { min: 1, max: 3 }
          - relay:
              new_connections: { min: 1 }
          - relay:
              new_connections: { from: 1h, min: 1 }
          - relay:
              attempts: { max_per_second: 100 }
          - relay:
              attempts: { min_growth: 50 }
          - relay:
              bytes: { dir: down, min: 20000 }
          - relay:
              bytes: { dir: up, max: 10 }
        """

    static func sha256Hex(_ bytes: [UInt8]) -> String {
        // Computed with the same library the runner uses, through a request-free path: the
        // generated body is deterministic, so this is the digest any client must report.
        NetsimRunnerTestDigest.hex(bytes)
    }

    @Test func eachKindPassesWhereItShouldAndFailsWhereItShould() async throws {
        let result = try await run(try scenario(Self.source))
        let expected: [(String, Bool)] = [
            ("request hello: status 200", true),
            ("request hello: body equals", true),
            ("request hello: error none", true),
            ("request hello: within 5s", true),
            ("request hello: requests exactly 2", true),
            ("request hello: status 404", false),
            ("request hello: body contains \"nope\"", false),
            ("request hello: error any", false),
            ("requests from 0 on: requests at least 100", false),
            ("request hello: connection reused", false),  // the first request opened its connection
            ("request hello: headers x-served-by, Content-Length, Set-Cookie", true),
            ("request hello: body lacks \"error\"", true),
            ("request hello: headers X-Served-By", false),
            ("request hello: body lacks \"world\"", false),
            ("request refused: headers Set-Cookie", false),  // no answer, so no headers to judge
            ("request again: headers X-Served-By", true),
            // Drivers report a body's first 64 KiB as text: the rest is unseen, so "lacks" cannot hold.
            ("request huge: body lacks \"not in there\"", false),
            ("request slow: within 200ms", false),
            ("request slow: within 5s", true),
            ("request missing: status 404", true),
            ("request fresh: connection new", true),
            ("request fresh: connection reused", false),
            ("request refused: error refused", true),  // the listener is closed: a real ECONNREFUSED
            ("request refused: error timeout", false),
            ("request refused: error none", false),
            ("request refused: connection new", false),
            ("server POST /order: count exactly 1", true),
            ("server /order: count exactly 2", false),
            ("server: count between 1 and 3", false),  // hello ×2, big, huge, slow, order, missing, fresh, again: 9
            ("relay: new connections at least 1", true),
            ("relay: connection attempts", true),
            ("relay: bytes down at least 20000", true),
            ("relay: bytes up at most 10", false),
        ]
        for (title, passes) in expected {
            let verdict = result.verdict(title)
            #expect(verdict != nil, "no verdict titled \(title); have: \(result.verdicts.map(\.title))")
            #expect(verdict?.passed == passes, "\(title): \(verdict?.expected ?? "") / \(verdict?.actual ?? "")")
        }
        let digests = result.verdicts.filter { $0.title == "request big: body digest" }
        #expect(digests.map(\.passed) == [true, false])
        // A failed digest shows the digest it got, not the (binary) body.
        let got = "SHA-256 \(Self.sha256Hex(BuiltinServer.generatedBody(bytes: 20000)))"
        #expect(digests.last?.actual.contains(got) == true, "\(digests.last?.actual ?? "")")
        // A failed header check shows what the header was; a failed not_contains, where the text is.
        #expect(result.verdict("request hello: headers X-Served-By")?.actual.contains("X-Served-By: \"edge-1\" (wanted X-Served-By containing \"edge-2\")") == true,
                "\(result.verdict("request hello: headers X-Served-By")?.actual ?? "")")
        #expect(result.verdict("request hello: body lacks \"world\"")?.actual.contains("its body has it: \"hello world\"") == true,
                "\(result.verdict("request hello: body lacks \"world\"")?.actual ?? "")")
        #expect(result.verdict("request huge: body lacks \"not in there\"")?.actual.contains("the body is 70000 bytes and the rest was not seen") == true,
                "\(result.verdict("request huge: body lacks \"not in there\"")?.actual ?? "")")
        // JUnit's failure message names what failed, not the report's first line (a passed check).
        #expect(JUnitReport.message(for: result) == "\(result.failures.count) of \(result.verdicts.count) checks failed, first: request hello: status 404")
        // A refused request had no connection: not the client's silence about its port.
        #expect(result.verdict("request refused: connection new")?.actual.contains("it went over no relay connection: refused after") == true,
                "\(result.verdict("request refused: connection new")?.actual ?? "")")
        // A count past five says how many it left out.
        #expect(result.verdict("server: count between 1 and 3")?.actual.hasSuffix(", … and 4 more") == true,
                "\(result.verdict("server: count between 1 and 3")?.actual ?? "")")
        let windows = result.verdicts.filter { $0.title == "relay: new connections at least 1" }.map(\.passed)
        #expect(windows == [true, false], "a window from 1h on sees nothing")
        let attempts = result.verdicts.filter { $0.title == "relay: connection attempts" }.map(\.passed)
        // Connections at ~0 s (two), ~1 s (fresh) and ~1.5 s (again): the last gap shrinks.
        #expect(attempts == [true, false], "connections here are not spaced 50× further apart each time")
        #expect(!result.passed)
    }
}
