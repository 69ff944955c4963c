import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import NetsimLoopback
import Testing

/// `netsim run` and `netsim test` as processes: exit codes, outputs, paths as people type them.
@Suite("netsim run and netsim test, the processes", .serialized)
struct ScenarioCommandTests {
    static let root = NetsimProcess.root.path

    /// Runs netsim in the repository root and returns (status, stdout, stderr).
    static func netsim(_ arguments: [String]) async throws -> (Int32, String, String) {
        let result = try await NetsimProcess.run(arguments)
        return (result.status, result.stdout, result.stderr)
    }

    static func temporary(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("netsim-\(UUID())-\(name)").path
    }

    @Test func runPassesTheBundledLockscreenScenarioAsPeopleTypeIt() async throws {
        let json = Self.temporary("run.json")
        defer { try? FileManager.default.removeItem(atPath: json) }
        let (status, out, _) = try await Self.netsim(["run", "scenarios/lockscreen.scn", "--json", json])
        #expect(status == 0, "\(out)")
        #expect(out.contains("▶ fault stale=rst on existing connections (lock)"))
        #expect(out.contains("PASS lockscreen"))
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) as? [String: Any]
        #expect(object?["passed"] as? Bool == true)
        #expect((object?["requests"] as? [Any])?.count == 11)
    }

    /// Several clients, one after another, into a pipe: each run's live lines, then its verdict.
    /// The live lines went straight out while the verdicts waited in `print`'s buffer, so every
    /// run's live lines came first and the verdicts after them, cut mid-word.
    @Test func severalClientsIntoAPipeComeOutRunByRun() async throws {
        let (status, out, err) = try await Self.netsim(["run", "Scenarios/refused.scn", "--client", "naive,resilient"])
        #expect(status == 1, "naive fails refused.scn: \(out)\(err)")
        let lines = out.split(separator: "\n").map(String.init)
        let marks = lines.filter { $0.hasPrefix("netsim run ") || $0.hasPrefix("PASS ") || $0.hasPrefix("FAIL ") }.map { String($0.prefix(4)) }
        #expect(marks == ["nets", "FAIL", "nets", "PASS"], "\(out)")
    }

    @Test func runExitsOneOnAFailedExpectationAndTwoOnInvalidInput() async throws {
        let failing = Self.temporary("failing.scn")
        let invalid = Self.temporary("invalid.scn")
        defer {
            try? FileManager.default.removeItem(atPath: failing)
            try? FileManager.default.removeItem(atPath: invalid)
        }
        let lockscreen = try String(contentsOfFile: Self.root + "/Scenarios/lockscreen.scn", encoding: .utf8)
        try lockscreen.replacingOccurrences(of: "retries: 1", with: "retries: 0").write(toFile: failing, atomically: true, encoding: .utf8)
        try lockscreen.replacingOccurrences(of: "timeline:", with: "timelin:").write(toFile: invalid, atomically: true, encoding: .utf8)
        let (failStatus, failOut, _) = try await Self.netsim(["run", failing])
        #expect(failStatus == 1)
        #expect(failOut.contains("✘ request after-unlock: error none"))
        #expect(failOut.contains("timeline around"))
        let (invalidStatus, invalidOut, invalidErr) = try await Self.netsim(["run", invalid])
        #expect(invalidStatus == 2)
        #expect(invalidErr.contains("unknown key 'timelin'"), "\(invalidErr)")
        #expect(!invalidOut.contains("▶"), "nothing ran")
        // A suite with an invalid scenario still leaves CI a JUnit file that says why nothing ran
        // (QA 52: none was written).
        let junit = Self.temporary("invalid-junit.xml")
        defer { try? FileManager.default.removeItem(atPath: junit) }
        let (suiteStatus, _, _) = try await Self.netsim(["test", invalid, "--junit", junit])
        #expect(suiteStatus == 2)
        let xml = (try? String(contentsOfFile: junit, encoding: .utf8)) ?? "no file"
        #expect(xml.contains("<error") && xml.contains("the scenario is invalid; nothing ran") && xml.contains("timelin"), "\(xml)")
        #expect((try? XMLDocument(xmlString: xml)) != nil, "the JUnit file parses")
    }

    /// An upstream that speaks only h2c, and a client that cannot: a configuration error, one
    /// line, exit 2, nothing run — not a run full of confusing failures.
    @Test func h2WithoutTLSForAClientThatCannotSpeakItIsAConfigurationError() async throws {
        let file = Self.temporary("h2c.scn")
        defer { try? FileManager.default.removeItem(atPath: file) }
        let source = """
            name: h2c
            description: the built-in upstream speaks h2 with prior knowledge only
            seed: 1
            upstream:
              http: [h2]
              routes:
                - path: /a
                  body: hi
            client:
              driver: resilient
            timeline:
              - request: a
                path: /a
            expect:
              - request: a
                status: 200
            """
        try source.write(toFile: file, atomically: true, encoding: .utf8)
        let (status, out, err) = try await Self.netsim(["run", file])
        #expect(status == 2)
        // At the client, as `netsim check` says it too (QA 61: check said ok, and run named no place).
        #expect(err.contains("\(file):9:1: error: the resilient driver cannot speak h2 without TLS (h2c, prior knowledge)"), "\(err)")
        #expect(err.contains("hint: add 'tls: true'"))
        #expect(!out.contains("▶"), "nothing ran")
        let (checked, _, said) = try await Self.netsim(["check", file])
        #expect(checked == 2 && said.contains("\(file):9:1: error: the resilient driver cannot speak h2"), "\(said)")
    }

    @Test func testRunsASuiteWritesJUnitAndEndsWithTheCounts() async throws {
        let junit = Self.temporary("junit.xml")
        defer { try? FileManager.default.removeItem(atPath: junit) }
        let (status, out, _) = try await Self.netsim(["test", "Scenarios/", "--junit", junit, "--jobs", "2"])
        #expect(status == 0, "\(out)")
        #expect(out.split(separator: "\n").last.map(String.init)?.hasSuffix(" passed, 0 failed") == true, "\(out)")
        let xml = try String(contentsOfFile: junit, encoding: .utf8)
        #expect(xml.contains("<testcase classname=\"Scenarios.lockscreen\" name=\"lockscreen\" file=\"Scenarios/lockscreen.scn\""))
        #expect(xml.contains("failures=\"0\""))
        // JUnit XML that XML parsers accept.
        #expect(XMLParser(data: Data(xml.utf8)).parse())
    }

    /// A run netsim could not start is an entry of `--json` that names its driver and seed, as a
    /// run's does, so it can be tried again alone (QA 52: it had neither).
    @Test func aRunThatCouldNotStartNamesItsDriverAndSeedInTheJSON() async throws {
        let json = Self.temporary("could-not-run.json")
        defer { try? FileManager.default.removeItem(atPath: json) }
        let (status, out, _) = try await Self.netsim([
            "test", "Scenarios/server-fin.scn", "--client", "exec:ghost=/nonexistent/netsim-client", "--seed", "9", "--json", json,
        ])
        #expect(status == 1, "\(out)")
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) as? [String: Any]
        let run = try #require((object?["runs"] as? [[String: Any]])?.first, "\(String(describing: object))")
        #expect(run["driver"] as? String == "ghost" && run["seed"] as? Int == 9 && run["passed"] as? Bool == false, "\(run)")
        #expect((run["error"] as? String)?.isEmpty == false, "\(run)")
        #expect(run["client"] as? String == "ghost", "\(run)")
        #expect(run["again"] as? String == "netsim run Scenarios/server-fin.scn --client exec:ghost=/nonexistent/netsim-client --seed 9", "\(run)")
    }

    /// A suite's run entry says the client as `--client` chose it (the matrix's column; `driver`
    /// is what the client calls itself) and the command that runs it again (QA 64: only the
    /// JUnit text had it). The scenario's own client is not a choice: no `client`.
    @Test func aSuitesRunEntryNamesItsClientAndHowToRunItAgain() async throws {
        let json = Self.temporary("suite-entry.json")
        defer { try? FileManager.default.removeItem(atPath: json) }
        func entry(_ choice: [String]) async throws -> [String: Any] {
            let (status, out, _) = try await Self.netsim(["test", "Scenarios/server-fin.scn", "--seed", "4", "--json", json] + choice)
            #expect(status <= 1, "a verdict (naive fails server-fin): \(out)")
            let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) as? [String: Any]
            return try #require((object?["runs"] as? [[String: Any]])?.first, "\(String(describing: object))")
        }
        let chosen = try await entry(["--client", "naive"])
        #expect(chosen["client"] as? String == "naive" && (chosen["driver"] as? String)?.hasPrefix("naive (") == true, "\(chosen)")
        #expect(chosen["again"] as? String == "netsim run Scenarios/server-fin.scn --client naive --seed 4", "\(chosen)")
        let own = try await entry([])
        #expect(own["client"] == nil && own["again"] as? String == "netsim run Scenarios/server-fin.scn --seed 4", "\(own)")
    }

    /// A run netsim could not make is timed as long as it tried (QA 58: a client that never said
    /// hello, 20 s, was `time="0.000"`).
    @Test func aRunThatCouldNotStartIsTimedAsLongAsItTried() async throws {
        let junit = Self.temporary("could-not-run.xml")
        defer { try? FileManager.default.removeItem(atPath: junit) }
        let (status, out, _) = try await Self.netsim([
            "test", "Scenarios/server-fin.scn", "--client", "exec:late=sh -c 'read config; sleep 1; exit 3'", "--junit", junit,
        ])
        #expect(status == 1, "\(out)")
        let xml = try String(contentsOfFile: junit, encoding: .utf8)
        let time = xml.components(separatedBy: "name=\"server-fin [late]\" file=\"Scenarios/server-fin.scn\" time=\"").dropFirst().first.flatMap { Double($0.prefix { $0 != "\"" }) }
        #expect((time ?? 0) >= 1, "\(xml)")
        #expect(xml.contains("<error message=\"netsim could not run it: the exec client exited (exit 3) before saying hello"), "\(xml)")
    }

    @Test func testRefusesToRunASuiteWithAnInvalidScenario() async throws {
        let folder = Self.temporary("suite")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let lockscreen = try String(contentsOfFile: Self.root + "/Scenarios/lockscreen.scn", encoding: .utf8)
        try lockscreen.write(toFile: folder + "/a.scn", atomically: true, encoding: .utf8)
        try lockscreen.replacingOccurrences(of: "profile: lte", with: "profile: wifi").write(toFile: folder + "/b.scn", atomically: true, encoding: .utf8)
        let junit = Self.temporary("invalid.xml")
        defer { try? FileManager.default.removeItem(atPath: junit) }
        let (status, out, err) = try await Self.netsim(["test", folder, "--junit", junit])
        #expect(status == 2)
        #expect(err.contains("b.scn:"), "\(err)")
        #expect(!out.contains("PASS"), "nothing ran")
        // CI's summary is the first error; the valid scenario is skipped, not gone (QA 58).
        let xml = try String(contentsOfFile: junit, encoding: .utf8)
        #expect(xml.contains(#"<error message="\#(folder)/b.scn:"#), "\(xml)")
        #expect(xml.contains(#"name="lockscreen" file="\#(folder)/a.scn" time="0.000">"#) && xml.contains("<skipped message=\"not run: 1 of 2 scenarios are invalid"), "\(xml)")
    }

    /// A path that names no scenario is invalid input (2), as for `netsim run` and `netsim
    /// check`, each one said as `check` says it; it was a usage error (64) naming the first only.
    @Test func testWithAPathThatNamesNoScenarioExitsTwoNamingEachOne() async throws {
        let empty = Self.temporary("empty")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let missing = Self.temporary("missing") + ".scn"
        // A report an earlier run left there is not taken for this one's (QA 58).
        let junit = Self.temporary("missing.xml")
        try "<stale/>".write(toFile: junit, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: junit) }
        let (status, out, err) = try await Self.netsim(["test", missing, "Scenarios/server-fin.scn", empty, "Fixtures/scenarios/invalid/bad-rate.scn", "--junit", junit])
        #expect(status == 2, "\(err)")
        // The scenarios found are checked all the same (QA 64: a missing path hid their errors).
        #expect(err.hasPrefix("\(missing): error: no such file or folder\n\(empty): error: no .scn files in this folder (or its subfolders)\n"), "\(err)")
        #expect(err.contains("Fixtures/scenarios/invalid/bad-rate.scn:9:14: error: bandwidth: '1 megabit' is not a data rate"), "\(err)")
        #expect(err.hasSuffix("netsim test: 2 paths name no scenario and 1 of 2 scenarios are invalid; nothing ran\n"), "\(err)")
        #expect(!out.contains("PASS"), "nothing ran: \(out)")
        // CI reads why in the JUnit file (QA 58: none was written): each error, the valid one skipped.
        let xml = try String(contentsOfFile: junit, encoding: .utf8)
        #expect(xml.contains(#"tests="4" failures="0" errors="3""#) && xml.contains(#"<error message="\#(missing): no such file or folder; nothing ran">"#), "\(xml)")
        #expect(xml.contains("<skipped"), "\(xml)")
        // A report path that is a symlink stays one: the report is written through it.
        let link = Self.temporary("link.xml")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: junit)
        defer { try? FileManager.default.removeItem(atPath: link) }
        try "<stale/>".write(toFile: junit, atomically: true, encoding: .utf8)
        _ = try await Self.netsim(["test", missing, "--junit", link])
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == junit)
        #expect(try String(contentsOfFile: junit, encoding: .utf8).contains("no such file or folder"))
    }

    /// On a pipe, as in a CI log, each verdict comes as its run ends, not all at the exit (QA 58:
    /// stdio held them, and a job killed at its time limit left an empty log); a failure says
    /// how to run it again alone.
    @Test func testStreamsItsVerdictsIntoAPipeAndSaysHowToRunAFailureAgain() async throws {
        // refused.scn fails with naive in about a second; lockscreen-long.scn takes ~7 s after it.
        let run = try WatchedProcess(NetsimProcess.executable, ["test", "Scenarios/refused.scn", "Scenarios/lockscreen-long.scn", "--client", "naive", "--jobs", "1"],
                                     directory: NetsimProcess.root)
        let first = Waitable<ContinuousClock.Instant?>(nil)
        run.whenLine(.output, where: { $0.hasPrefix("FAIL Scenarios/refused.scn") }) { _ in first.update { $0 = .now } }
        let result = try await run.result(within: .seconds(120))
        let early = try #require(first.value, "no FAIL line: \(result.standardOutput)")
        #expect(ContinuousClock.now - early > .seconds(3), "the first verdict came with the last, at the exit:\n\(result.standardOutput)")
        #expect(result.standardOutput.contains("  again: netsim run Scenarios/refused.scn --client naive --seed 6\n"), "\(result.standardOutput)")
        // The failures are named just above the counts, where a CI log is read (QA 64).
        let tail = result.standardOutput.split(separator: "\n").suffix(2).map(String.init)
        #expect(tail.first?.hasPrefix("failed: refused [naive]") == true && tail.last?.hasSuffix(" failed") == true, "\(tail)")
    }
}
