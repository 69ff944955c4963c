import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import Logging
import NetsimLoopback
import Testing
@testable import netsim

/// `netsim test --shard`, progress on a pipe, `--log-level`/`--log-format`: the processes.
@Suite("sharding, progress and logging, the processes")
struct OpsCommandTests {
    /// A folder of `count` copies of Scenarios/refused.scn (about a second each), named s1, s2, …
    static func suite(_ count: Int) throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-shards-\(UUID())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let refused = try String(contentsOfFile: NetsimProcess.root.path + "/Scenarios/refused.scn", encoding: .utf8)
        for i in 1...count {
            try refused.replacingOccurrences(of: "name: refused", with: "name: s\(i)")
                .write(toFile: "\(folder)/s\(i).scn", atomically: true, encoding: .utf8)
        }
        return folder
    }

    /// The test case names in a JUnit file, which must be XML parsers accept.
    static func testCases(_ path: String) throws -> [String] {
        let document = try XMLDocument(contentsOf: URL(fileURLWithPath: path))
        return try document.nodes(forXPath: "//testcase/@name").compactMap(\.stringValue)
    }

    @Test func shardsOfASuiteAreDisjointAndCompleteAndTheirJUnitMerges() async throws {
        let folder = try Self.suite(4)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var seen: [String] = []
        for index in 1...2 {
            let junit = "\(folder)/junit-\(index).xml"
            let result = try await NetsimProcess.run(["test", folder, "--shard", "\(index)/2", "--junit", junit, "--jobs", "2"])
            #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
            #expect(result.stdout.contains("netsim test: shard \(index)/2: 2 of 4 scenarios"), "\(result.stdout)")
            let cases = try Self.testCases(junit)
            #expect(cases.count == 2)
            let xml = try String(contentsOfFile: junit, encoding: .utf8)
            #expect(xml.contains(#"<testsuite name="netsim shard \#(index) of 2""#), "\(xml)")
            seen += cases
        }
        #expect(seen.sorted() == ["s1", "s2", "s3", "s4"])
        // The documented merge (docs/running.md): every shard's <testsuite> under one <testsuites>.
        let merged = try await NetsimProcess.run(["junit-merge", "--output", "\(folder)/all.xml", "\(folder)/junit-1.xml", "\(folder)/junit-2.xml"])
        #expect(merged.status == 0, "\(merged.stderr)")
        #expect(try Self.testCases("\(folder)/all.xml").sorted() == ["s1", "s2", "s3", "s4"])
        let all = try String(contentsOfFile: "\(folder)/all.xml", encoding: .utf8)
        #expect(all.contains(#"<testsuites name="netsim" tests="4" failures="0""#), "\(all)")
    }

    @Test("bad --shard values exit 2 and say what is allowed", arguments: ["3/2", "0/2", "2", "x/y"])
    func badShard(_ value: String) async throws {
        let result = try await NetsimProcess.run(["test", "Scenarios/refused.scn", "--shard", value])
        #expect(result.status == 2)
        #expect(result.stderr.contains("write I/N, the I-th of N shards, with N ≥ 1 and 1 ≤ I ≤ N"), "\(result.stderr)")
        #expect(!result.stdout.contains("PASS"), "nothing ran")
    }

    @Test func aPipeGetsNoProgressAndLogsStayOnStandardError() async throws {
        let result = try await NetsimProcess.run(["test", "Scenarios/refused.scn", "--log-level", "debug", "--log-format", "json"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(!result.stdout.contains("\u{1B}") && !result.stdout.contains("\r"), "no redrawing on a pipe: \(result.stdout.debugDescription)")
        #expect(!result.stdout.contains("·"), "no progress line: \(result.stdout)")
        #expect(result.stdout.contains("PASS Scenarios/refused.scn"))
        #expect(!result.stdout.contains(#""level""#), "no log line on standard output")
        // Every diagnostic is one JSON object per line.
        let lines = result.stderr.split(separator: "\n").map(String.init)
        let objects = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(objects.count == lines.count, "every stderr line is JSON: \(result.stderr)")
        #expect(objects.contains { $0["label"] as? String == "netsim.relay" && $0["message"] as? String == "listening" }, "\(result.stderr)")
        #expect(objects.contains { $0["label"] as? String == "netsim.runner" && $0["message"] as? String == "judged" }, "\(result.stderr)")
    }

    /// relay's status lines (where it listens, the link, stopped) and its loud warning are JSON
    /// records too under `--log-format json`, even at the default level.
    @Test func jsonFormatMakesTheStatusLinesRecordsToo() async throws {
        // The loud warning of --upstream-insecure, on loopback (a test listens nowhere else); its
        // CA is made in a folder of the test's own.
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-json-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: home) }
        let run = try await WatchedProcess(URL(fileURLWithPath: "/usr/bin/env"), [
            "NETSIM_HOME=\(home.path)", NetsimProcess.executable.path, "relay", "--upstream", "127.0.0.1:9",
            "--tls", "intercept", "--upstream-insecure", "--duration", "0.2s", "--log-format", "json",
        ], directory: NetsimProcess.root).result(within: .seconds(120))
        let result = NetsimProcess.Result(status: run.status, stdout: run.standardOutput, stderr: run.standardError)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n").map(String.init)
        let objects = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(!lines.isEmpty && objects.count == lines.count, "every stderr line is JSON: \(result.stderr)")
        let status = objects.filter { $0["label"] as? String == "netsim.status" }.compactMap { $0["message"] as? String }
        #expect(status.first { $0.hasPrefix("netsim relay: 127.0.0.1:") } != nil, "\(status)")
        #expect(status.contains("link, each connection its own: unimpaired") && status.last == "netsim relay: stopped", "\(status)")
        #expect(objects.contains { $0["level"] as? String == "warning" && ($0["message"] as? String)?.hasPrefix("WARNING: --upstream-insecure") == true }, "\(result.stderr)")
    }

    #if os(Linux)
    @Test func aTerminalGetsTheProgressBlockRedrawnInPlace() async throws {
        // util-linux's script(1) gives netsim a pseudo-terminal; CI is unset for it, as on a laptop.
        let command = "\(NetsimProcess.executable.path) test Scenarios/refused.scn"
        let result = try await WatchedProcess(URL(fileURLWithPath: "/usr/bin/env"),
                                              ["-u", "CI", "TERM=xterm", "script", "-qfec", command, "/dev/null"],
                                              directory: NetsimProcess.root).result(within: .seconds(60))
        #expect(result.status == 0, "\(result.standardOutput)\(result.standardError)")
        let out = result.standardOutput
        #expect(out.contains("netsim test · "), "the block: \(out.debugDescription)")
        #expect(out.contains("  ▶ refused  "), "the run in progress: \(out.debugDescription)")
        #expect(out.contains("\u{1B}[2K"), "erased before each redraw: \(out.debugDescription)")
        #expect(out.contains("PASS Scenarios/refused.scn"))
        #expect(out.hasSuffix("\u{1B}[2K1 passed, 0 failed\r\n"), "the block is gone before the summary: \(out.debugDescription)")
    }
    #endif

    @Test func theDefaultLevelIsQuietAndABadLevelIsAUsageError() async throws {
        let quiet = try await NetsimProcess.run(["relay", "--upstream", "127.0.0.1:9", "--duration", "0.2s"])
        #expect(quiet.status == 0)
        #expect(!quiet.stderr.contains("listening"), "debug lines only with --log-level debug: \(quiet.stderr)")
        let text = try await NetsimProcess.run(["relay", "--upstream", "127.0.0.1:9", "--duration", "0.2s", "--log-level", "debug"])
        #expect(text.stderr.contains("debug netsim.relay:") && text.stderr.contains("listening"), "\(text.stderr)")
        let bad = try await NetsimProcess.run(["relay", "--upstream", "127.0.0.1:9", "--log-level", "loud"])
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("use one of trace, debug, info, notice, warning, error, critical"), "\(bad.stderr)")
    }

    /// `--splice` beside what touches every connection says no connection can take it (QA 63).
    @Test func spliceThatCanNeverActSaysSo() async throws {
        let shaped = try await NetsimProcess.run(["relay", "--upstream", "127.0.0.1:9", "--duration", "0.2s", "--splice", "--latency", "10ms"])
        #expect(shaped.stderr.contains("note: --splice: the link model touches every connection, so none takes the splice path"), "\(shaped.stderr)")
        let plain = try await NetsimProcess.run(["relay", "--upstream", "127.0.0.1:9", "--duration", "0.2s", "--splice"])
        #expect(!plain.stderr.contains("none takes the splice path"), "\(plain.stderr)")
    }

    @Test func aJSONLogLineCarriesItsMetadata() throws {
        let line = JSONLogHandler.line(time: Date(timeIntervalSince1970: 0), level: .info, label: "netsim.relay",
                                       message: "listening", metadata: ["address": "127.0.0.1:8081", "n": .stringConvertible(3)], source: "NetsimRelay")
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        #expect(object?["time"] as? String == "1970-01-01T00:00:00.000Z")
        #expect(object?["level"] as? String == "info")
        #expect((object?["metadata"] as? [String: Any])?["address"] as? String == "127.0.0.1:8081")
        #expect((object?["metadata"] as? [String: Any])?["n"] as? String == "3")
        #expect(!line.contains("\n"))
    }
}
