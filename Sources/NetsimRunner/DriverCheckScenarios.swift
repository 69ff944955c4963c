import NetsimCore
import NetsimFaults
import NetsimScenario

/// The scenarios `netsim driver-check` runs, and how it judges them: one for well-formed answers
/// (statuses, headers, bodies, the request tag, local ports, concurrency), one per error kind.
enum DriverCheckScenarios {
    static let text = "netsim driver check"
    /// SHA-256 of ``text``.
    static let textDigest = "850048d5e39b212264ed49f21b63b3324dd081377d32e28b89d1d42b20f06ef2"

    static let routes = """
        upstream:
          routes:
            - path: /text
              headers: { Content-Type: text/plain, X-Check: Yes, Set-Cookie: one=1, set-cookie: two=2 }
              body: '\(text)'
            - path: /echo
              method: POST
              body: posted
            - path: /error
              status: 500
              body: server error
            - path: /slow
              delay: 1500ms
              body: slow
            - path: /bytes
              body_bytes: 100000
            - path: /stuck
              delay: 6s
              body: too late
        """

    static let answers = """
        name: driver-check-answers
        description: well-formed answers, concurrency, the request tag
        seed: 1
        \(routes)
        client:
          driver: exec
          command: [the-client-under-check]
          timeout: 10s
          retries: 0
        timeline:
          - at: 0s
            request: slow
            path: /slow
          - at: 100ms
            request: fast
            path: /text
            headers: { X-Custom: kept }
          - request: post
            method: POST
            path: /echo
            body: hello body
          - request: not-found
            path: /nothing-here
          - request: server-error
            path: /error
          - request: bytes
            path: /bytes
        expect:
          - server: {}
            count: { max: 100 }
        """

    static func judgeAnswers(_ run: RunResult) -> [DriverCheck.Finding] {
        typealias Finding = DriverCheck.Finding
        func outcome(_ name: String) -> RequestOutcome? { run.outcomes.first { $0.name == name } }
        guard let fast = outcome("fast"), let slow = outcome("slow"), let post = outcome("post"),
              let notFound = outcome("not-found"), let serverError = outcome("server-error"), let bytes = outcome("bytes")
        else { return [Finding("answers", .fail, "the run lost requests:\n" + run.clientLog)] }
        var findings: [Finding] = []
        func failed(_ outcome: RequestOutcome) -> String? {
            outcome.response.error.map { "GET \(outcome.path) failed: \($0.rawValue) \(outcome.response.errorMessage ?? "")" }
        }

        // Status, headers, body.
        let response = fast.response
        var problems: [String] = []
        if let failure = failed(fast) { problems.append(failure) }
        if response.status != 200 { problems.append("status \(response.status.map(String.init) ?? "null"), expected 200") }
        if response.body != text { problems.append("body \(response.body.map { "\"\($0.prefix(60))\"" } ?? "null"), expected \"\(text)\"") }
        if response.bodySHA256 != textDigest { problems.append("body_sha256 \(response.bodySHA256 ?? "null"), expected \(textDigest) (lower-case hex of the whole body)") }
        if response.bodyLength != text.utf8.count { problems.append("body_length \(response.bodyLength.map(String.init) ?? "null"), expected \(text.utf8.count)") }
        findings.append(Finding("answer", problems.isEmpty ? .pass : .fail, problems.isEmpty ? "status, body, body_sha256, body_length" : problems.joined(separator: "; ")))
        let upper = response.headers.map(\.name).filter { $0 != $0.lowercased() }
        let check = response.headers.first { $0.name == "x-check" }?.value
        // A header sent twice is one entry, its values joined in the order sent (Set-Cookie's
        // way; node's fetch hands each over on its own and a client kept only the last).
        let repeated = response.headers.filter { $0.name == "set-cookie" }.map(\.value)
        let headerProblem = !upper.isEmpty ? "names must be lower-cased: \(upper.joined(separator: ", "))"
            : check != "Yes" ? "x-check is \(check.map { "\"\($0)\"" } ?? "missing"), the server sent \"Yes\""
            : repeated != ["one=1, two=2"] ? "set-cookie is \(repeated.isEmpty ? "missing" : repeated.map { "\"\($0)\"" }.joined(separator: " and ")); the server sent it twice (one=1, then two=2): report \"one=1, two=2\""
            : nil
        findings.append(Finding("answer headers", headerProblem == nil ? .pass : .fail,
                                headerProblem ?? "lower-cased names, values as sent, a repeated header's values joined"))

        // The request tag: every request carries X-Netsim-Request; the relay saw it.
        let map = ConnectionMap(events: run.events)
        let tagged = map.connection(tagged: RequestTag.value(name: fast.name, index: 0), before: fast.finished)
        findings.append(Finding("request headers", tagged != nil ? .pass : .fail,
                                tagged != nil ? "\(RequestTag.header) reached the server as given"
                                    : "the relay never saw \(RequestTag.header): \(RequestTag.value(name: fast.name, index: 0)) — send every request header as given"))

        // local_port: optional, but when given it must be the port of the connection used.
        if let port = response.localPort {
            let byPort = map.connection(port: port, before: fast.finished)?.id
            let right = byPort != nil && (tagged == nil || byPort == tagged)
            findings.append(Finding("local_port", right ? .pass : .fail,
                                    right ? "\(port) is the connection that carried the request"
                                        : "\(port) is not the client port of the connection that carried the request (the relay saw it on \(tagged.map { "\($0)" } ?? "an unknown connection"))"))
        } else {
            findings.append(Finding("local_port", .warn, "null: allowed, connection checks then rely on the relay's record of \(RequestTag.header)"))
        }

        // POST body, statuses that are answers, a large body, concurrency.
        let echoed = run.serverRequests.first { $0.path == "/echo" }
        findings.append(Finding("request body", echoed?.method == "POST" && echoed?.bodyBytes == 10 && post.response.status == 200 ? .pass : .fail,
                                echoed.map { "the server got \($0.method) with \($0.bodyBytes) body bytes (expected POST with 10)" } ?? (failed(post) ?? "the POST never reached the server")))
        let statuses = [(notFound, 404), (serverError, 500)].map { outcome, expected -> String? in
            outcome.response.status == expected && outcome.response.error == nil ? nil
                : "GET \(outcome.path): expected status \(expected) and error null, got " + (failed(outcome) ?? "status \(outcome.response.status.map(String.init) ?? "null")")
        }.compactMap { $0 }
        findings.append(Finding("error statuses", statuses.isEmpty ? .pass : .fail,
                                statuses.isEmpty ? "404 and 500 are answers, not errors" : statuses.joined(separator: "; ")))
        let big = bytes.response
        // Its text is the first 65536 bytes: netsim cuts a longer one and says so in the log
        // (/bytes is the one body here that long).
        let wholeText = run.clientLog.contains(ExecAnswer.keptText)
        let bigRight = big.bodyLength == 100_000 && (big.bodySHA256?.count == 64) && !wholeText
        findings.append(Finding("large body", bigRight ? .pass : .fail,
                                bigRight ? "100000 bytes: body_length, a digest of the whole body, the first 65536 as text"
                                    : failed(bytes) ?? (wholeText && big.bodyLength == 100_000 && big.bodySHA256?.count == 64
                                        ? "\"body\" held more than the body's first 65536 bytes (docs/drivers.md)"
                                        : "body_length \(big.bodyLength.map(String.init) ?? "null") (expected 100000), body_sha256 \(big.bodySHA256 ?? "null")")))
        // Answered well before the slow one, not merely first: a client that takes requests one
        // at a time answers /text a few milliseconds after /slow, and the runner stamps each answer
        // as its task resumes, which under load can put the second first (a CI run passed the
        // broken client this way).
        let concurrent = fast.finished < slow.finished - 500_000_000 && slow.response.status == 200
        if !concurrent, let failure = failed(slow) ?? failed(fast) {
            // A failed request says nothing of concurrency (QA 65: a malformed answer read as
            // "handle requests concurrently" beside times that showed it did).
            findings.append(Finding("concurrency", .fail, "cannot be judged: \(failure)"))
        } else {
            findings.append(Finding("concurrency", concurrent ? .pass : .fail,
                                    concurrent ? "a request sent while another waited was answered first"
                                        : "GET /text (sent 100 ms after a 1.5 s GET /slow) finished at \(formatNanoseconds(fast.finished)), /slow at \(formatNanoseconds(slow.finished)): handle requests concurrently and answer in any order"))
        }
        return findings
    }

    /// One error kind: the scenario that provokes it and how its answer is judged.
    struct ErrorCase {
        var kind: ErrorKind
        /// What the client meets, for the verdict line.
        var what: String
        var source: String
        var limit: Int64?

        func judge(_ run: RunResult) -> DriverCheck.Finding {
            guard let outcome = run.outcomes.first else { return DriverCheck.Finding("error \(kind.rawValue)", .fail, "no request was made") }
            // Every case but a refused connect is met on a connection the relay accepts: a
            // client that answers the right kind without making one passed (QA 65).
            let connected = run.events.contains { if case .opened = $0.kind { true } else { false } }
            if kind != .refused, !connected, !ExecDriver.isNetsims(outcome.response) {
                return DriverCheck.Finding("error \(kind.rawValue)", .fail,
                                           "\(what): the client answered without connecting (the relay saw no connection); make the request, and report what it met")
            }
            return DriverCheck.judge(outcome.response, expected: kind, what: what, took: outcome.duration, limit: limit)
        }
    }

    static func errorCase(_ kind: ErrorKind, _ what: String, fault: String?, path: String = "/text", timeout: String = "5s", tls: Bool = false, limit: Int64? = nil) -> ErrorCase {
        let faultStep = fault.map { "\n  - fault: \($0)" } ?? ""
        let upstream = tls ? routes.replacingOccurrences(of: "upstream:\n", with: "upstream:\n  tls: true\n") : routes
        return ErrorCase(kind: kind, what: what, source: """
            name: driver-check-\(kind.rawValue)
            description: \(what)
            seed: 1
            \(upstream)
            client:
              driver: exec
              command: [the-client-under-check]
              timeout: \(timeout)
              connect_timeout: \(timeout)
              retries: 0
            timeline:\(faultStep)
              - request: probe
                path: \(path)
            expect:
              - server: {}
                count: { max: 100 }
            """, limit: limit)
    }

    static let errorKinds: [ErrorCase] = [
        errorCase(.refused, "a connect refused (relay fault refuse)", fault: "refuse"),
        errorCase(.reset, "a connection reset as soon as it was accepted (reject)", fault: "reject"),
        errorCase(.closedBeforeResponse, "the server closed (FIN) without answering (empty)", fault: "empty"),
        errorCase(.timeout, "no answer within config's timeout of 1 s (the server takes 6 s)", fault: nil, path: "/stuck", timeout: "1s", limit: 3_500_000_000),
        errorCase(.other, "a body cut short by a FIN (cut=5)", fault: "cut=5"),
        errorCase(.other, "an answer of random bytes (garbage)", fault: "garbage"),
        errorCase(.tls, "a self-signed certificate (bad-cert=self-signed)", fault: "bad-cert=self-signed", tls: true),
    ]
}
