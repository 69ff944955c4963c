import Foundation
import NetsimLoopback
import Testing

/// `--exec`, `--exec-dir`, `--client …,exec:NAME=COMMAND` and `netsim driver-check` as processes
/// (docs/drivers.md, "Bring your own client").
@Suite("bring your own client, the process")
struct ExecCommandTests {
    static let urllib3 = "python3 Fixtures/clients/urllib3_client.py"

    static func folder() throws -> String {
        let folder = ScenarioCommandTests.temporary("exec")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try MatrixCommandTests.oneRequest.write(toFile: folder + "/one-request.scn", atomically: true, encoding: .utf8)
        return folder
    }

    @Test func runWithExecUsesThatClientForAScenarioNamingAnotherDriver() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (status, out, err) = try await ScenarioCommandTests.netsim(["run", folder + "/one-request.scn", "--exec", Self.urllib3])
        #expect(status == 0, "\(out)\(err)")
        #expect(out.contains("exec: urllib3"), "\(out)")
    }

    @Test func anExecColumnJoinsTheMatrix() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let matrix = folder + "/matrix.md"
        let (status, out, err) = try await ScenarioCommandTests.netsim(
            ["test", folder, "--client", "resilient,exec:u3=python3 clients/urllib3_client.py,exec:u3-dir=python3 'clients/urllib3_client.py'", "--exec-dir", "Fixtures", "--matrix", matrix])
        #expect(status == 0, "\(out)\(err)")
        let lines = out.split(separator: "\n").map(String.init)
        #expect(lines.suffix(3) == ["scenario     resilient  u3    u3-dir", "one-request  pass       pass  pass", "3 passed, 0 failed"], "\(out)")
        // Each exec column's runs say its name: they read "exec: urllib3 …" alike.
        #expect(out.contains("PASS \(folder)/one-request.scn (one-request, u3: exec: urllib3"), "\(out)")
        #expect(out.contains("PASS \(folder)/one-request.scn (one-request, u3-dir: exec: urllib3"), "\(out)")
        // The file's command can be pasted back into a shell (QA 47: the spaced value was bare).
        let markdown = try String(contentsOfFile: matrix, encoding: .utf8)
        #expect(markdown.contains(#"--client 'resilient,exec:u3=python3 clients/urllib3_client.py,exec:u3-dir=python3 '\''clients/urllib3_client.py'\''' --exec-dir Fixtures"#), "\(markdown)")
    }

    /// `--client urllib3`: the reference client by its library's name, whatever exec client the
    /// scenario names — here one that names none and drives `resilient`.
    @Test func urllib3IsAClientName() async throws {
        let (status, output, errors) = try await ScenarioCommandTests.netsim(["run", "Scenarios/refused.scn", "--client", "urllib3"])
        #expect(status == 0, "\(output)\n\(errors)")
        #expect(output.contains("exec: urllib3"), "\(output)")
    }

    /// Usage errors, as every flag's: exit status 64 (ArgumentParser's EX_USAGE), the item named.
    @Test func badClientListsAreConfigErrorsNamingTheItem() async throws {
        let (noName, _, noNameErr) = try await ScenarioCommandTests.netsim(["run", "Scenarios/refused.scn", "--client", "exec:python3"])
        #expect(noName == 64)
        #expect(noNameErr.contains("write exec:NAME=COMMAND"), "\(noNameErr)")
        let (builtin, _, builtinErr) = try await ScenarioCommandTests.netsim(["run", "Scenarios/refused.scn", "--client", "exec:naive=python3 x.py"])
        #expect(builtin == 64)
        #expect(builtinErr.contains("'naive' is a built-in driver's column"), "\(builtinErr)")
        // QA 36: the second command under one name was dropped without a word.
        let (twice, _, twiceErr) = try await ScenarioCommandTests.netsim(["test", "Scenarios/refused.scn", "--client", "exec:mine=python3 a.py,exec:mine=python3 b.py"])
        #expect(twice == 64)
        #expect(twiceErr.contains("--client exec:mine=python3 b.py: the name 'mine' is given to two commands"), "\(twiceErr)")
        let (quote, _, quoteErr) = try await ScenarioCommandTests.netsim(["run", "Scenarios/refused.scn", "--exec", "python3 'x.py"])
        #expect(quote == 64)
        #expect(quoteErr.contains("--exec: the command python3 'x.py has an unterminated quote"), "\(quoteErr)")
        let (dir, _, dirErr) = try await ScenarioCommandTests.netsim(["run", "Scenarios/refused.scn", "--exec-dir", "Fixtures"])
        #expect(dir == 64)
        #expect(dirErr.contains("--exec-dir needs --exec"), "\(dirErr)")
        // QA 47: --exec with a --client list that has no exec column was ignored.
        let (unused, _, unusedErr) = try await ScenarioCommandTests.netsim(["run", "Scenarios/refused.scn", "--client", "naive", "--exec", "python3 x.py"])
        #expect(unused == 64)
        #expect(unusedErr.contains("--exec 'python3 x.py' runs as the exec column, which --client naive does not name; add exec to the list (--client naive,exec)"), "\(unusedErr)")
        // Quotes inside: the suggestion still pastes into a shell (QA 49).
        let (_, _, quotedErr) = try await ScenarioCommandTests.netsim(["run", "Scenarios/refused.scn", "--client", "naive ", "--exec", "python3 x.py '{}'"])
        #expect(quotedErr.contains(#"--exec 'python3 x.py '\''{}'\''' runs as the exec column, which --client 'naive ' does not name; add exec to the list (--client naive,exec)"#), "\(quotedErr)")
        // An empty item, most often a variable not set, was skipped unsaid (QA 50); inside an
        // exec: item's command a comma is the command's.
        let (unknown, _, unknownErr) = try await ScenarioCommandTests.netsim(["run", "Scenarios/refused.scn", "--client", "naive,nosuch"])
        #expect(unknown == 64)
        #expect(unknownErr.contains("--client naive,nosuch: 'nosuch' is not a driver"), "\(unknownErr)")
        // Counted as the user sees the items, a command's commas inside its own (QA 51).
        for (list, item) in [("naive,,naive", 2), ("naive,", 2), (",curl", 1), ("'naive,exec:x=echo a,b,'", 3), ("'exec:x=echo a,b,naive,,curl'", 3)] {
            let (empty, _, emptyErr) = try await ScenarioCommandTests.netsim(["run", "Scenarios/refused.scn", "--client", list.trimmingCharacters(in: ["'"])])
            #expect(empty == 64)
            #expect(emptyErr.contains("--client \(list): item \(item) is empty (a variable that was not set?)"), "\(emptyErr)")
        }
        // A folder that is not there was `cannot run /usr/bin/env`, once the run had started.
        let (noDir, _, noDirErr) = try await ScenarioCommandTests.netsim(["run", "Scenarios/refused.scn", "--exec", "python3 x.py", "--exec-dir", "/nonexistent"])
        #expect(noDir == 64)
        #expect(noDirErr.contains("--exec-dir /nonexistent: there is no such folder"), "\(noDirErr)")
        // driver-check too: it blamed /usr/bin/env, exit 1 (QA 65).
        let (checkNoDir, _, checkNoDirErr) = try await ScenarioCommandTests.netsim(["driver-check", "--exec-dir", "/nonexistent", "--", "python3", "x.py"])
        #expect(checkNoDir == 64)
        #expect(checkNoDirErr.contains("--exec-dir /nonexistent: there is no such folder"), "\(checkNoDirErr)")
    }

    /// An in-process driver behind the exec protocol (what a packet link runs in its namespace):
    /// hello names the driver, an answer carries the request's id and the error kind, and the
    /// driver's log names a scenario's request by its tag, as a relay run's does (QA 64: `#8`).
    @Test func execClientServesTheProtocolWithAnInProcessDriver() async throws {
        let client = try WatchedProcess(NetsimProcess.executable, ["exec-client", "--client", "naive"], standardInput: true)
        let lines = [
            #"{"type":"config","timeout":2,"connect_timeout":null,"pool":null,"retries":0,"settings":{}}"#,
            // Port 1 on loopback: nothing listens there, the connect is refused at once.
            #"{"type":"request","id":7,"method":"GET","url":"http://127.0.0.1:1/","headers":{},"body":null}"#,
            #"{"type":"request","id":8,"method":"GET","url":"http://127.0.0.1:1/","headers":{"x-netsim-request":"feed#2"},"body":null}"#,
        ]
        try client.write(lines.joined(separator: "\n") + "\n")
        client.closeInput()
        let result = try await client.result(within: .seconds(30))
        let replies = result.standardOutput.split(separator: "\n").map(String.init)
        #expect(result.status == 0, "\(result.standardError)")
        #expect(replies.count == 3, "\(replies)")
        #expect(replies.first?.contains(#""type":"hello""#) == true && replies.first?.contains("naive") == true, "\(replies)")
        let seven = replies.first { $0.contains(#""id":7"#) }
        #expect(seven?.contains(#""kind":"refused""#) == true, "\(replies)")
        #expect(result.standardError.contains("#7 attempt 1: connect failed"), "\(result.standardError)")
        #expect(result.standardError.contains("feed #2 attempt 1: connect failed"), "\(result.standardError)")

        let (status, _, err) = try await ScenarioCommandTests.netsim(["exec-client", "--client", "curl"])
        #expect(status == 64)
        #expect(err.contains("urlsession, async-http-client, naive, resilient"), "\(err)")
    }

    /// A client that dies at once: the check stops at hello, says why with the client's stderr,
    /// exit status 1 (and netsim is not killed by SIGPIPE writing config into the dead pipe).
    @Test func driverCheckSaysWhyAClientFailsHello() async throws {
        let (status, out, _) = try await ScenarioCommandTests.netsim(["driver-check", "--", "sh", "-c", "printf '%s-%s\\n' last words >&2; exit 4"])
        #expect(status == 1, "\(out)")
        #expect(out.contains("FAIL  hello — the exec client exited (exit 4) before saying hello"), "\(out)")
        #expect(out.contains("last-words"), "its stderr is shown: \(out)")
        #expect(out.hasSuffix("0 passed, 0 warnings, 1 failed\n"), "\(out)")
        let (usage, _, usageErr) = try await ScenarioCommandTests.netsim(["driver-check"])
        #expect(usage == 64, "\(usageErr)")
    }
}
