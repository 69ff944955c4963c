import Foundation
import NetsimRunner
import Testing

/// `netsim driver-check` against the bundled clients (conformant) and a client that is
/// wrong on purpose (Fixtures/clients/broken_client.py): each of its mistakes is named.
@Suite("driver-check: the exec protocol's conformance check")
struct DriverCheckTests {
    static func check(_ script: String, with interpreter: String = "python3") async -> [String: [DriverCheck.Finding]] {
        let client = ExecClient(command: [interpreter, "Fixtures/clients/" + script], directory: repositoryRoot)
        let findings = await DriverCheck.run(client, options: RunOptions(workingDirectory: repositoryRoot))
        return Dictionary(grouping: findings, by: \.check)
    }

    static func render(_ findings: [String: [DriverCheck.Finding]]) -> String {
        findings.values.flatMap { $0 }.map(\.line).joined(separator: "\n")
    }

    /// The reference urllib3 client and the built-in httpx client (Python clients that can tell
    /// their local port) pass every check.
    @Test(arguments: ["urllib3_client.py", "httpx_client.py"])
    func aBundledPythonClientPassesEveryCheck(_ script: String) async {
        let findings = await Self.check(script)
        let all = findings.values.flatMap { $0 }
        #expect(all.allSatisfy { $0.verdict == .pass }, "\(Self.render(findings))")
        // Every message and every error kind was exercised.
        for check in ["hello", "hello protocol", "answer", "answer headers", "request headers", "local_port", "request body",
                      "error statuses", "large body", "concurrency", "end"] + ErrorKindNames.all {
            #expect(findings[check] != nil, "no \(check) check:\n\(Self.render(findings))")
        }
        #expect(findings["error other"]?.count == 2)
    }

    /// The walkthrough's example (docs/drivers.md) and the `node-fetch` column: conformant; fetch
    /// does not expose its socket, so `local_port` is only a warning. `error reset` may also be
    /// the 5 s `timeout`: on a loaded machine undici sometimes neither reports `reject`'s reset
    /// nor connects again (the relay logs the one connection, reset at accept; seen 1 run in ~4).
    @Test func theNodeFetchClientPassesWithALocalPortWarning() async {
        let findings = await Self.check("node_fetch_client.mjs", with: "node")
        let all = findings.values.flatMap { $0 }.filter { $0.check != "error reset" }
        #expect(all.filter { $0.verdict != .pass }.map(\.check) == ["local_port"], "\(Self.render(findings))")
        #expect(findings["error reset"]?.first.map { $0.verdict == .pass || $0.detail.contains("got \"timeout\"") } == true, "\(Self.render(findings))")
        #expect(findings["local_port"]?.first?.verdict == .warn)
    }

    /// Every library named for `--client` has its client in the repository, under its name, and
    /// is in `--client all` (ci/test runs driver-check on each; the matrix has a column for each).
    @Test func everyBuiltInLibraryClientIsBundled() {
        let names = DriverFactory.adapters.map(\.name)
        #expect(names == ["node-fetch", "httpx", "requests", "aiohttp", "curl", "go", "okhttp"])
        for adapter in DriverFactory.adapters {
            #expect(DriverFactory.available.contains(adapter.name))
            let paths = adapter.command.filter { $0.contains("/") }
            #expect(paths.count == 1, "\(adapter.name): \(adapter.command)")
            for path in paths {
                #expect(FileManager.default.fileExists(atPath: repositoryRoot + "/" + path), "\(adapter.name): \(path) is missing")
            }
        }
    }

    /// A client that crashes on a request: netsim answers in its place with kind "other", and
    /// the "error other" checks must not count that as the client's classification.
    @Test func aCrashingClientDoesNotPassTheOtherChecks() async {
        let findings = await Self.check("crashing_client.py")
        let other = findings["error other"] ?? []
        #expect(other.count == 2, "\(Self.render(findings))")
        #expect(other.allSatisfy { $0.verdict == .fail && $0.detail.contains("the client gave no answer") }, "\(Self.render(findings))")
        // Every other failure says so first, rather than blame what its check was about.
        let failed = findings.values.flatMap { $0 }.filter { $0.verdict == .fail && $0.check != "end" && $0.check != "error dns" }
        #expect(!failed.isEmpty && failed.allSatisfy { $0.detail.contains("the client gave no answer") }, "\(Self.render(findings))")
    }

    @Test func aBrokenClientIsToldEachMistake() async {
        let findings = await Self.check("broken_client.py")
        func verdict(_ check: String) -> DriverCheck.Finding.Verdict? { findings[check]?.first?.verdict }
        let text = Self.render(findings)
        #expect(verdict("hello protocol") == .fail, "\(text)")
        #expect(findings["hello protocol"]?.first?.detail.contains("no \"protocol\" in hello") == true, "\(text)")
        #expect(verdict("answer headers") == .fail, "\(text)")
        #expect(findings["answer headers"]?.first?.detail.contains("names must be lower-cased:") == true, "\(text)")
        #expect(findings["answer headers"]?.first?.detail.contains("X-Check") == true, "\(text)")
        #expect(verdict("local_port") == .fail, "\(text)")
        #expect(verdict("concurrency") == .fail, "\(text)")
        #expect(verdict("end") == .fail, "\(text)")
        #expect(findings["end"]?.first?.detail.hasPrefix("exit 3") == true, "\(text)")
        // Everything is "other": each kind but other is named with what it got.
        for kind in ["refused", "reset", "closed-before-response", "timeout", "tls", "dns"] {
            let finding = findings["error \(kind)"]?.first
            #expect(finding?.verdict == .fail, "\(text)")
            #expect(finding?.detail.contains("expected error kind \"\(kind)\", got \"other\"") == true, "\(text)")
        }
        // What it does right passes: status, body, the tag, 404/500, the POST body.
        for check in ["answer", "request headers", "error statuses", "request body", "large body"] {
            #expect(verdict(check) == .pass, "\(check):\n\(text)")
        }
    }

    /// A client that sends every answer twice (the reference client behind a wrapper that
    /// doubles its answer lines): one `protocol` failure naming the second answer, once for the
    /// whole check. The second answers were ignored without a word, and it passed (QA 47).
    @Test func aClientThatAnswersTwiceIsToldSoOnce() async {
        let wrapper = #"""
            import subprocess, sys
            child = subprocess.Popen([sys.executable, "Fixtures/clients/urllib3_client.py"], stdin=sys.stdin, stdout=subprocess.PIPE)
            for line in child.stdout:
                sys.stdout.buffer.write(line * (2 if line.startswith(b'{"id"') else 1))
                sys.stdout.flush()
            sys.exit(child.wait())
            """#
        let findings = await DriverCheck.run(ExecClient(command: ["python3", "-c", wrapper], directory: repositoryRoot),
                                             options: RunOptions(workingDirectory: repositoryRoot))
        let text = findings.map(\.line).joined(separator: "\n")
        let protocolFindings = findings.filter { $0.check == "protocol" }
        #expect(protocolFindings.count == 1 && protocolFindings.first?.verdict == .fail, "\(text)")
        #expect(protocolFindings.first?.detail.contains("which no request is waiting for (answered already, given up on at netsim's deadline, or never sent)") == true, "\(text)")
        #expect(findings.filter { $0.verdict == .fail }.count == 1, "only that: \(text)")
    }

    /// A client that answers every request "other" without making it, and greets with an
    /// empty name: each error case it did not meet fails as such, concurrency is not judged on
    /// failed requests, and the empty name is a warning (QA 65: the two "other" cases passed, the
    /// name passed, and concurrency blamed a client whose times showed it concurrent).
    @Test func aClientThatAnswersWithoutConnectingIsToldSo() async {
        let liar = #"""
            import json, sys
            sys.stdin.readline()
            print(json.dumps({"type": "hello", "name": "", "version": "", "protocol": 1}), flush=True)
            for line in sys.stdin:
                request = json.loads(line)
                print(json.dumps({"id": request["id"], "status": None, "headers": {}, "body_sha256": None, "body_length": None, "body": None,
                                  "error": {"kind": "other", "message": "made up"}, "local_port": None}), flush=True)
            """#
        let findings = await DriverCheck.run(ExecClient(command: ["python3", "-c", liar], directory: repositoryRoot),
                                             options: RunOptions(workingDirectory: repositoryRoot))
        let text = findings.map(\.line).joined(separator: "\n")
        let other = findings.filter { $0.check == "error other" }
        #expect(other.count == 2 && other.allSatisfy { $0.verdict == .fail && $0.detail.contains("the client answered without connecting") }, "\(text)")
        #expect(findings.first { $0.check == "hello" }?.verdict == .warn, "\(text)")
        #expect(findings.first { $0.check == "concurrency" }?.detail.hasPrefix("cannot be judged: GET /slow failed: other") == true, "\(text)")
    }

    /// A client that says hello and never answers: one "answers" failure after 20 s (the greeting's client timeout, 10 s, and 10 s), then the
    /// end, and none of the scenario checks (each would wait out its own deadlines).
    @Test func aClientThatNeverAnswersStopsTheCheckAtItsFirstRequest() async {
        let findings = await Self.check("mute_client.py")
        let text = Self.render(findings)
        #expect(findings["answers"]?.first?.verdict == .fail, "\(text)")
        #expect(findings["answers"]?.first?.detail.contains("no answer to a request within 20s") == true, "\(text)")
        #expect(Set(findings.keys) == ["hello", "hello protocol", "answers", "end"], "\(text)")
    }
}

enum ErrorKindNames {
    static let all = ["refused", "reset", "closed-before-response", "timeout", "other", "tls", "dns"].map { "error " + $0 }
}
