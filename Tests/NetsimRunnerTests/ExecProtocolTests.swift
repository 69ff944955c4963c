import Foundation
import NetsimCore
import NetsimHTTP
@testable import NetsimRunner
import NetsimScenario
import Testing

/// The exec protocol's lines (docs/drivers.md) as the types write and read them, and what the
/// exec driver does with a client that breaks the protocol.
@Suite("Exec protocol")
struct ExecProtocolTests {
    static func client(timeout: Duration? = .milliseconds(2500), pool: Int? = 4, settings: [String: String] = [:]) -> ClientSpec {
        ClientSpec(driver: "exec", timeout: timeout, pool: pool, settings: settings, location: SourceLocation(file: "test", line: 1, column: 1))
    }

    static func text(_ command: ExecCommand) throws -> String {
        String(decoding: try command.line(), as: UTF8.self)
    }

    @Test func configWritesEveryFieldWithNullForTheClientsDefault() throws {
        #expect(try Self.text(.config(ExecConfig(Self.client(settings: ["block": "true"])))) ==
            #"{"connect_timeout":null,"pool":4,"retries":null,"settings":{"block":"true"},"timeout":2.5,"type":"config"}"# + "\n")
        #expect(try Self.text(.config(ExecConfig(Self.client(timeout: nil, pool: nil)))) ==
            #"{"connect_timeout":null,"pool":null,"retries":null,"settings":{},"timeout":null,"type":"config"}"# + "\n")
    }

    @Test func aRequestCarriesItsIdHeadersAndANullBody() throws {
        let request = DriverRequest(id: 7, method: "GET", url: "http://127.0.0.1:9/feed", headers: [HTTPHeader("Accept", "*/*")], body: nil)
        #expect(try Self.text(.request(ExecRequest(request))) ==
            #"{"body":null,"headers":{"Accept":"*\/*"},"id":7,"method":"GET","type":"request","url":"http:\/\/127.0.0.1:9\/feed"}"# + "\n")
        let line = try Self.text(.request(ExecRequest(DriverRequest(id: 8, method: "POST", url: "u", headers: [], body: "x"))))
        #expect(try JSONDecoder().decode(ExecCommand.self, from: Data(line.utf8)) == .request(ExecRequest(DriverRequest(id: 8, method: "POST", url: "u", headers: [], body: "x"))))
    }

    static func parse(_ line: String) -> ExecReply { ExecReply.parse(Data(line.utf8)) }

    @Test func helloAndAnswersAreRead() {
        #expect(Self.parse(#"{"type":"hello","name":"urllib3","version":"2.x"}"#) == .hello(ExecHello(name: "urllib3", version: "2.x")))
        guard case .answer(let answer) = Self.parse(
            #"{"id":7,"status":200,"headers":{"x-b":"2","content-type":"text/plain"},"body_sha256":"ab","body_length":2,"body":"hi","error":null,"local_port":51234,"elapsed":0.1}"#
        ) else {
            Issue.record("not an answer")
            return
        }
        #expect(answer.id == 7)
        #expect(answer.response == DriverResponse(
            status: 200, headers: [HTTPHeader("content-type", "text/plain"), HTTPHeader("x-b", "2")],
            bodySHA256: "ab", bodyLength: 2, body: "hi", localPort: 51234))
    }

    @Test func aFailureKeepsItsKindAndAnUnknownKindIsOther() {
        guard case .answer(let reset) = Self.parse(#"{"id":1,"status":null,"headers":{},"error":{"kind":"reset","message":"Connection reset by peer"},"local_port":null}"#),
              case .answer(let odd) = Self.parse(#"{"id":2,"error":{"kind":"gremlins"}}"#)
        else {
            Issue.record("not answers")
            return
        }
        #expect(reset.response == DriverResponse(error: .reset, errorMessage: "Connection reset by peer"))
        #expect(odd.response.error == .other)
        // The unknown kind is said, with the kinds there are; a known one says nothing.
        #expect(reset.kindProblem == nil)
        #expect(odd.kindProblem == #"the answer to request 2 has error kind "gremlins", which is not one of "refused", "reset", "closed-before-response", "timeout", "tls", "dns", "other"; counted as "other" (docs/drivers.md, "Classifying errors")"#)
        guard case .answer(let kindless) = Self.parse(#"{"id":3,"error":{"message":"boom"}}"#) else {
            Issue.record("not an answer")
            return
        }
        #expect(kindless.response.error == .other)
        #expect(kindless.kindProblem?.hasPrefix(#"the answer to request 3 has an error without a "kind", counted as "other""#) == true)
    }

    /// An answer's text is the body's first 65536 bytes, as every driver reports it; a client
    /// that sent more has it cut there and is told so (QA 62: 50 MB were kept and judged). A
    /// U+FFFD stands for the one invalid byte it replaced; a character is never split.
    @Test func aBodyPast64KiBIsCutToItsFirst65536Bytes() throws {
        func answer(_ body: String) -> ExecAnswer { ExecAnswer(id: 7, status: 200, body: body) }
        let exact = answer(String(repeating: "x", count: 65536)).limitingBody()
        #expect(exact.note == nil && exact.answer.body?.utf8.count == 65536)
        let long = answer(String(repeating: "x", count: 70000)).limitingBody()
        #expect(long.answer.body == String(repeating: "x", count: 65536))
        #expect(long.note == "the answer to request 7 has a body of 70000 bytes of text; netsim kept its first 65536 (docs/drivers.md: body is at most the body's first 65536 bytes)")
        // 65536 invalid bytes, each a U+FFFD of three UTF-8 bytes: within the limit.
        let replaced = answer(String(repeating: "\u{FFFD}", count: 65536)).limitingBody()
        #expect(replaced.note == nil && replaced.answer.body?.unicodeScalars.count == 65536)
        // "é" is two bytes: 32768 of them fill the limit, the next is not split.
        let accented = answer(String(repeating: "é", count: 40000)).limitingBody()
        #expect(accented.answer.body == String(repeating: "é", count: 32768))
        #expect(accented.note != nil)
    }

    @Test func linesThatBreakTheProtocolSayWhy() {
        #expect(Self.parse("Traceback (most recent call last):") == .unreadable(problem: "not a JSON object on stdout", id: nil))
        #expect(Self.parse("[1, 2]") == .unreadable(problem: "not a JSON object on stdout", id: nil))
        #expect(Self.parse(#"{"status":200}"#) == .unreadable(problem: #"a line without an integer "id" on stdout, ignored"#, id: nil))
        #expect(Self.parse(#"{"id":3,"status":"200"}"#) == .unreadable(problem: #"a malformed answer on stdout ("status" is not an integer)"#, id: 3))
        #expect(Self.parse(#"{"id":4,"headers":{"a":1}}"#) == .unreadable(problem: #"a malformed answer on stdout ("headers.a" is not a string)"#, id: 4))
        #expect(Self.parse(#"{"type":"hello","version":2}"#) == .malformedHello(problem: #"a malformed hello on stdout ("version" is not a string)"#))
        #expect(Self.parse(#"{"id":6,"status":70000}"#) == .unreadable(problem: #"a malformed answer on stdout ("status" 70000 is not an HTTP status, 100 to 599)"#, id: 6))
        // Valid JSON whose number does not fit an integer field (QA 49: "not valid JSON").
        for number in ["1.5", "99999999999999999999"] {
            #expect(Self.parse(#"{"type":"hello","protocol":"# + number + "}") == .malformedHello(problem: #"a malformed hello on stdout ("protocol" is not an integer)"#))
            #expect(Self.parse(#"{"id":2,"status":"# + number + "}") == .unreadable(problem: #"a malformed answer on stdout ("status" is not an integer)"#, id: 2))
        }
    }

    /// A shell client that says `hello`, reads its config, runs `then`, and answers each request
    /// with `answer`, a printf format whose `%s` is the request's id.
    static func answering(hello: String, then: String = "", answer: String) -> String {
        """
        printf '%s\\n' '\(hello)'
        read config
        \(then)
        while read line; do
          id=$(printf '%s' "$line" | sed -E 's/.*"id":([0-9]+).*/\\1/')
          printf '\(answer)\\n' "$id"
        done
        """
    }

    /// A client that says hello, writes a stray line, then answers every request with a status
    /// that is not a number: the request fails at once with the reason, and the log says what
    /// was wrong with each line.
    @Test func aClientThatBreaksTheProtocolFailsTheRequestAndTheLogSaysWhy() async throws {
        let script = Self.answering(hello: #"{"type":"hello","name":"fake","version":"1"}"#, then: "printf 'not json\\n'",
                                    answer: #"{"id":%s,"status":"200"}"#)
        let driver = try ExecDriver(command: ["sh", "-c", script], client: Self.client())
        try await driver.ready(timeout: .seconds(20))
        #expect(driver.name == "exec: fake 1")
        let response = try await driver.perform(DriverRequest(id: 5, method: "GET", url: "http://127.0.0.1:9/", headers: [], body: nil))
        await driver.shutdown()
        #expect(response.error == .other)
        #expect(response.errorMessage == #"netsim: the exec client broke the protocol (docs/drivers.md): a malformed answer on stdout ("status" is not an integer)"#)
        let log = await driver.log
        #expect(log.contains("[netsim] not a JSON object on stdout: not json\n"), "\(log)")
        #expect(log.contains(#"[netsim] a malformed answer on stdout ("status" is not an integer): {"id":5,"status":"200"}"#), "\(log)")
    }

    /// An answer whose error kind netsim does not know fails its request as `other`, and the
    /// client's log says so, which is what driver-check's `protocol` check reads.
    @Test func anUnknownErrorKindIsNotedInTheLog() async throws {
        let script = Self.answering(hello: #"{"type":"hello","name":"typo","protocol":1}"#,
                                    answer: #"{"id":%s,"error":{"kind":"connection_reset","message":"x"}}"#)
        let driver = try ExecDriver(command: ["sh", "-c", script], client: Self.client())
        try await driver.ready(timeout: .seconds(60))
        let response = try await driver.perform(DriverRequest(id: 4, method: "GET", url: "http://127.0.0.1:9/", headers: [], body: nil))
        await driver.shutdown()
        #expect(response.error == .other)
        #expect(response.errorMessage == "x")
        let log = await driver.log
        #expect(log.contains(#"[netsim] the answer to request 4 has error kind "connection_reset""#), "\(log)")
        #expect(DriverCheck.protocolFindings(log).first?.verdict == .fail)
    }

    /// A second hello is noted and changes nothing: the client was taken as speaking what its
    /// first said (QA 49: a second one announcing protocol 2 ended the run under way).
    @Test func aSecondHelloIsNotedAndIgnored() async throws {
        let script = Self.answering(hello: #"{"type":"hello","name":"twice","protocol":1}"#,
                                    then: #"printf '%s\n' '{"type":"hello","name":"again","protocol":2}'"#,
                                    answer: #"{"id":%s,"status":204}"#)
        let driver = try ExecDriver(command: ["sh", "-c", script], client: Self.client())
        try await driver.ready(timeout: .seconds(60))
        let response = try await driver.perform(DriverRequest(id: 3, method: "GET", url: "http://127.0.0.1:9/", headers: [], body: nil))
        try await driver.ready(timeout: .seconds(60))  // still greeted, not refused
        await driver.shutdown()
        #expect(response.status == 204 && driver.name == "exec: twice")
        let log = await driver.log
        #expect(log.contains(#"[netsim] a second hello on stdout, ignored"#), "\(log)")
    }

    /// A client that does not exit when stdin closes is sent SIGTERM 3 s later, and it ends: it
    /// was started with SIGTERM unblocked although the runner's threads block it. One that
    /// ignores SIGTERM is killed 2 s after it, so no client outlives its run.
    @Test(arguments: [false, true])
    func aClientThatOutstaysStdinIsEnded(ignoresSIGTERM: Bool) async throws {
        let script = #"""
            printf '%s\n' '{"type":"hello","name":"stays","protocol":1}'
            read config
            """# + (ignoresSIGTERM ? "\ntrap '' TERM" : "") + "\nexec sleep 60\n"
        let driver = try ExecDriver(command: ["sh", "-c", script], client: Self.client())
        try await driver.ready(timeout: .seconds(20))
        let start = ContinuousClock.now
        await driver.shutdown()
        #expect(driver.ending == (ignoresSIGTERM
            ? "did not exit within 3 s after stdin closed, nor 2 s after SIGTERM; netsim killed it (SIGKILL)"
            : "did not exit within 3 s after stdin closed; netsim terminated it (SIGTERM)"))
        #expect(ContinuousClock.now - start < .seconds(20))
    }

    /// A first line that is not a hello fails the run at once, quoted (QA 62: a banner on stdout
    /// waited the 20 s for a hello); so does a first line past 16 MiB, read no further than that
    /// (a 200 MB hello took 1.3 GB).
    @Test func aFirstLineThatIsNotAHelloFailsAtOnce() async throws {
        let start = ContinuousClock.now
        let banner = try ExecDriver(command: ["sh", "-c", "read config; echo 'Welcome to my client v1.0!'; sleep 30"], client: Self.client())
        await #expect { try await banner.ready(timeout: .seconds(20)) } throws: { error in
            "\(error)".hasPrefix("the exec client's first line is not its hello: Welcome to my client v1.0! (docs/drivers.md")
        }
        #expect(ContinuousClock.now - start < .seconds(10))
        await banner.shutdown()
        let script = "import sys, time; sys.stdin.readline(); sys.stdout.write('{\"type\":\"hello\",\"name\":\"' + 'x' * (20 << 20)); sys.stdout.flush(); time.sleep(30)"
        let huge = try ExecDriver(command: ["python3", "-c", script], client: Self.client())
        await #expect { try await huge.ready(timeout: .seconds(20)) } throws: { error in
            "\(error)".hasPrefix(#"the exec client's first line is over 16 MiB; it began: {"type":"hello","name":"xxx"#)
        }
        await huge.shutdown()
        let long = try ExecDriver(command: ["python3", "-c", "import sys, time; sys.stdin.readline(); print('{\"type\":\"hello\",\"protocol\":1,\"name\":\"' + 'n' * 100000 + '\"}', flush=True); time.sleep(30)"],
                                  client: Self.client())
        try await long.ready(timeout: .seconds(20))
        #expect(long.name == "exec: " + String(repeating: "n", count: 200) + "…", "a report's header shows 200 characters of it")
        await long.shutdown()
    }

    /// `ready` ends on the client's first news: an exit before hello says so with its stderr
    /// (all of it: the reader's end is awaited), and silence ends at the timeout.
    @Test func readyEndsOnAnExitBeforeHelloOrAtItsTimeout() async throws {
        let gone = try ExecDriver(command: ["sh", "-c", "read config; echo 'no module named urllib3' >&2; exit 3"], client: Self.client())
        await #expect { try await gone.ready(timeout: .seconds(20)) } throws: { error in
            "\(error)" == "the exec client exited (exit 3) before saying hello\nno module named urllib3\n"
        }
        await gone.shutdown()
        #expect(gone.ending == "exit 3")

        let silent = try ExecDriver(command: ["sh", "-c", "exec sleep 60"], client: Self.client())
        let start = ContinuousClock.now
        await #expect { try await silent.ready(timeout: .milliseconds(300)) } throws: { error in
            "\(error)".hasPrefix("the exec client did not say hello within 300ms")
        }
        #expect(ContinuousClock.now - start >= .milliseconds(300))
        await silent.shutdown()
    }

    /// A hello that does not decode ends `ready` at once with the field that is wrong and the
    /// line, rather than at the timeout (QA 47: it waited the full 20 s).
    @Test func aMalformedHelloFailsAtOnce() async throws {
        let script = #"printf '%s\n' '{"type":"hello","name":"odd","version":2}'; exec sleep 60"#
        let driver = try ExecDriver(command: ["sh", "-c", script], client: Self.client())
        let start = ContinuousClock.now
        await #expect { try await driver.ready(timeout: .seconds(60)) } throws: { error in
            "\(error)".hasPrefix(#"the exec client's hello cannot be read: a malformed hello ("version" is not a string); it said: {"type":"hello","name":"odd","version":2}"#)
        }
        #expect(ContinuousClock.now - start < .seconds(30))
        await driver.shutdown()
    }
}
