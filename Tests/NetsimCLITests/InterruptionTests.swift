import Foundation
import NetsimCore
import NetsimLoopback
import NetsimRunner
import Testing

/// Ctrl-C in the middle of `netsim run`: exit 130 with one line saying what was stopped, the
/// capture so far a whole pcap and the events so far in `--events`. Before, SIGINT killed netsim at once, and the pcap was cut at its
/// writer's buffer (8 KiB), unreadable ("the file is truncated").
@Suite("an interrupted run")
struct InterruptionTests {
    @Test func ctrlCMidRunClosesTheCaptureAndExits130() async throws {
        let pcap = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-interrupted-\(UUID()).pcap")
        defer { try? FileManager.default.removeItem(at: pcap) }
        // An earlier run's reports at this run's paths: gone, not left to be read as this one's
        // (QA 66: a cancelled CI job archived the last run's verdict).
        let stale = ["json", "html", "jsonl"].map { FileManager.default.temporaryDirectory.appendingPathComponent("netsim-interrupted-\(UUID()).\($0)").path }
        for path in stale { try "from an earlier run".write(toFile: path, atomically: true, encoding: .utf8) }
        defer { for path in stale { try? FileManager.default.removeItem(atPath: path) } }
        let run = try WatchedProcess(NetsimProcess.executable, ["run", "Scenarios/lockscreen-long.scn", "--pcap", pcap.path,
                                                                "--json", stale[0], "--html", stale[1], "--events", stale[2]],
                                     directory: NetsimProcess.root)
        // The timeline's first wait: requests have gone through the relay, more are to come. The
        // Ctrl-C goes from the thread reading the output the moment that line comes: a task
        // awaiting it can resume seconds late on a busy machine, and CI's went after the run's end.
        let sent = Waitable<ContinuousClock.Instant?>(nil)
        let pid = run.processIdentifier
        run.whenLine(.output, where: { $0.contains("▶ wait") }) { _ in
            kill(pid, SIGINT)
            sent.update { $0 = .now }
        }
        let result = try await run.result(within: .seconds(80))
        let after = sent.value.map { "\(ContinuousClock.now - $0) after the SIGINT" } ?? "with no SIGINT sent"
        #expect(result.status == 130, "exited \(after); it said:\n\(result.standardOutput)\n\(result.standardError)")
        #expect(result.standardError.contains("netsim run: interrupted by SIGINT: 1 run stopped, 1 relay closed its connections, 1 exec client sent SIGTERM (SIGKILL 1 s later), 1 capture closed; the events so far written to \(stale[2])"), "\(result.standardError)")
        #expect(stale[0 ..< 2].allSatisfy { !FileManager.default.fileExists(atPath: $0) }, "an earlier run's report was left")
        // The timeline up to the Ctrl-C, whose run stopped at its first wait (QA 66: no event log
        // was written): requests relayed, then the step that says the run did not finish.
        let lines = try String(contentsOfFile: stale[2], encoding: .utf8).split(separator: "\n")
        let kinds = lines.compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["event"] as? String
        }
        #expect(kinds.count == lines.count && kinds.first == "seed" && kinds.contains("http_request"), "\(lines.prefix(5))")
        #expect(lines.last?.contains(#""step":"interrupted by SIGINT: the run did not finish""#) == true, "\(lines.suffix(3))")
        // Every connection opened is closed in it, and the relay's listener (QA 67: the relay was
        // left running, its connections without an end).
        let records = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let connections = { (event: String) in Set(records.filter { $0["event"] as? String == event }.compactMap { $0["conn"] as? Int }) }
        #expect(!connections("opened").isEmpty && connections("opened") == connections("closed"), "\(lines.suffix(8))")
        #expect(kinds.dropLast().last == "listener_closed", "\(lines.suffix(3))")
        let profile = try await NetsimProcess.run(["profile", pcap.path])
        #expect(profile.status == 0, "the capture so far is a whole pcap: \(profile.stderr)")
        #expect(profile.stdout.contains("TCP flows"), "\(profile.stdout)")
    }

    /// An exec client that ignores SIGTERM does not outlive an interrupted run: it gets SIGKILL
    /// a second later. It kept running, reparented to init, until it ended by itself. (With
    /// `--log-format json`, whose records the interruption's line joins.)
    @Test func anExecClientThatIgnoresSIGTERMIsKilled() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-stubborn-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let pidFile = folder.appendingPathComponent("pid").path
        try """
            import json, os, signal, sys, time
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            open(sys.argv[1], "w").write(str(os.getpid()))
            sys.stdin.readline()
            print(json.dumps({"type": "hello", "name": "stubborn", "version": "1", "protocol": 1}), flush=True)
            time.sleep(60)
            """.write(to: folder.appendingPathComponent("stubborn.py"), atomically: true, encoding: .utf8)
        try """
            name: stubborn
            description: a client that answers nothing and ignores SIGTERM
            upstream:
              routes:
                - path: /
                  body: ok
            client:
              driver: exec
              command: [python3, \(folder.path)/stubborn.py, \(pidFile)]
              timeout: 30s
            timeline:
              - request: never
                path: /
            expect:
              - request: never
                status: 200
            """.write(to: folder.appendingPathComponent("stubborn.scn"), atomically: true, encoding: .utf8)
        let run = try WatchedProcess(NetsimProcess.executable, ["run", folder.appendingPathComponent("stubborn.scn").path, "--log-format", "json"],
                                     directory: NetsimProcess.root)
        _ = try await run.line(.output, within: .seconds(60)) { $0.contains("▶ request never") }
        let pid = try #require(Int32((try? String(contentsOfFile: pidFile, encoding: .utf8)) ?? ""), "the client wrote no pid")
        kill(run.processIdentifier, SIGINT)
        let result = try await run.result(within: .seconds(20))
        #expect(result.status == 130, "\(result.standardError)")
        // Its request failed because netsim ended the client: no live line blames the client
        // for it (QA 43: "✗ never #1: other …: the exec client exited before answering").
        #expect(!result.standardOutput.contains("✗ never"), "\(result.standardOutput)")
        // Nor a report of the run the cleanup ended (QA 46: now and then it came out whole).
        #expect(!result.standardOutput.contains("FAIL stubborn"), "\(result.standardOutput)")
        // Under --log-format json the handler's line is a record too: every line parses.
        let lines = result.standardError.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(lines.contains { $0.contains("interrupted by SIGINT") }, "\(result.standardError)")
        for line in lines { #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) != nil, "not JSON: '\(line)'") }
        // Gone once reaped, or a zombie where nothing reaps orphans (a container's PID 1).
        let deadline = ContinuousClock.now + .seconds(10)
        while ProcessStat.isLive(pid), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(!ProcessStat.isLive(pid), "the exec client \(pid) outlived the interrupted run")
    }

    /// A suite interrupted (a CI job cancelled, or at its time limit) reports what finished: the
    /// run that passed, the one it stopped as an error, the one that never started as skipped,
    /// as pytest's `--junitxml` does. It wrote nothing, and CI showed no results at all.
    @Test func anInterruptedSuiteReportsWhatFinished() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-interrupted-suite-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // Run two at a time, in name order: `a` ends at once, `b` and `c` wait; `d` never starts.
        try Self.waitingScenario("a", in: folder, waiting: "10ms")
        for name in ["b", "c", "d"] { try Self.waitingScenario(name, in: folder, waiting: "60s") }
        let junit = folder.appendingPathComponent("results.xml").path
        let json = folder.appendingPathComponent("results.json").path
        let run = try WatchedProcess(NetsimProcess.executable, ["test", folder.path, "--jobs", "2", "--junit", junit, "--json", json],
                                     directory: NetsimProcess.root)
        _ = try await run.line(.output, within: .seconds(60)) { $0.hasPrefix("PASS ") && $0.contains("a.scn") }
        kill(run.processIdentifier, SIGTERM)
        let result = try await run.result(within: .seconds(30))
        #expect(result.status == 143, "\(result.standardOutput)\n\(result.standardError)")
        #expect(result.standardError.contains("reports of what finished written to \(junit), \(json) (1 run finished, "), "\(result.standardError)")
        let xml = try String(contentsOfFile: junit, encoding: .utf8)
        #expect(xml.contains(#"<testcase classname="#) && xml.contains(#"name="a" file="\#(folder.path)/a.scn""#), "\(xml)")
        #expect(xml.contains(#"name="b" file="\#(folder.path)/b.scn""#) && xml.contains("interrupted by SIGTERM after"), "\(xml)")
        #expect(xml.contains("not run: the suite was interrupted by SIGTERM first"), "\(xml)")
        #expect(xml.contains(#"tests="4" failures="0""#), "every scenario is a case: \(xml)")
        let suite = try JSONDecoder().decode(JSONReport.Suite.self, from: Data(contentsOf: URL(fileURLWithPath: json)))
        #expect(suite.interrupted == "SIGTERM")
        #expect(suite.passed == 1, "\(suite.runs)")
        #expect(suite.skipped.map(\.scenario).contains("d"), "\(suite.skipped)")
    }

    /// Runs the interruption's cleanup ends at once (exec clients sent SIGTERM) made room, and
    /// the suite started the next ones after Ctrl-C (QA 66: a packet-link run among them, with
    /// its namespace). Nothing starts once an interruption has begun.
    @Test func nothingStartsAfterTheInterruption() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-no-start-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let client = NetsimProcess.root.appendingPathComponent("Fixtures/clients/urllib3_client.py").path
        for name in ["b", "c", "d", "e"] {
            let marker = folder.appendingPathComponent(name).path
            try Self.waitingScenario(name, in: folder, waiting: "60s",
                                     client: "  driver: exec\n  command: [sh, -c, 'touch \"$0.started\"; exec python3 \"$1\"', \(marker), \(client)]")
        }
        let junit = folder.appendingPathComponent("results.xml").path
        let run = try WatchedProcess(NetsimProcess.executable, ["test", folder.path, "--jobs", "2", "--junit", junit], directory: NetsimProcess.root)
        func started() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".started") }.sorted()
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while started().count < 2, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        try #require(started() == ["b.started", "c.started"], "\(started())")
        kill(run.processIdentifier, SIGINT)
        let result = try await run.result(within: .seconds(30))
        #expect(result.status == 130, "\(result.standardError)")
        #expect(started() == ["b.started", "c.started"], "started after the interruption: \(started())")
        #expect(result.standardError.contains("(0 runs finished, 2 stopped, 2 not started)"), "\(result.standardError)")
    }

    /// A scenario that waits, then asks for `/`: what an interrupted suite has in flight.
    static func waitingScenario(_ name: String, in folder: URL, waiting: String, client: String = "  driver: resilient") throws {
        try """
            name: \(name)
            description: a suite interrupted while its runs wait
            upstream:
              routes:
                - path: /
                  body: ok
            client:
            \(client)
            timeline:
              - wait: \(waiting)
              - request: one
                path: /
            expect:
              - request: one
                status: 200
            """.write(to: folder.appendingPathComponent("\(name).scn"), atomically: true, encoding: .utf8)
    }
}
