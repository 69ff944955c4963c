import Foundation
import NetsimLoopback
import Testing

/// A report or event log named `/dev/stdout` while standard output is redirected to a regular
/// file (`netsim run … --json /dev/stdout > out`). Opened again, the path had an offset of its
/// own, from 0: the JSON overwrote the report's first lines and the report's last lines landed
/// inside the JSON (QA 43). Through a pipe it was always whole: a pipe has no offset.
@Suite("reports on standard output redirected to a file")
struct StandardOutputReportTests {
    /// Runs `netsim ARGUMENTS > FILE` through the shell in the repository root; returns the
    /// exit status and what the file holds.
    static func netsimIntoAFile(_ arguments: String) async throws -> (Int32, String) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-\(UUID())-stdout.txt").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        let command = "exec '\(NetsimProcess.executable.path)' \(arguments) > '\(file)'"
        let result = try await WatchedProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", command], directory: NetsimProcess.root)
            .result(within: .seconds(120))
        return (result.status, try String(contentsOfFile: file, encoding: .utf8))
    }

    @Test func theReportAndTheJSONFollowEachOther() async throws {
        let (status, text) = try await Self.netsimIntoAFile("run Scenarios/refused.scn --json /dev/stdout")
        #expect(status == 0, "\(text)")
        #expect(text.hasPrefix("netsim run Scenarios/refused.scn"), "the report's first line is kept: \(text.prefix(200))")
        #expect(text.contains("PASS refused"))
        // The JSON, whole, where it was written: from its `{` line to the last `}` line.
        let lines = text.components(separatedBy: "\n")
        let start = try #require(lines.firstIndex(of: "{"), "\(text)")
        let end = try #require(lines.lastIndex(of: "}"), "\(text)")
        let json = lines[start...end].joined(separator: "\n")
        let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        #expect(object?["passed"] as? Bool == true)
    }

    /// A report that cannot be written says which option's it is, after the verdict (QA 67:
    /// `cannot write /dev/full: No space left on device` named neither).
    @Test func aReportThatCannotBeWrittenNamesItsOption() async throws {
        let result = try await NetsimProcess.run(["run", "Scenarios/refused.scn", "--events", "/dev/full"], timeout: .seconds(120))
        #expect(result.status == 1 && result.stdout.contains("PASS refused"), "\(result.stdout)")
        #expect(result.stderr.contains("--events /dev/full: cannot write it: No space left on device"), "\(result.stderr)")
    }

    /// `netsim test` prints its header through `print`'s buffer: the JSON came before it, and
    /// its last `}` had the summary glued to it (QA 46).
    @Test func aSuitesJSONFollowsItsHeaderOnItsOwnLines() async throws {
        let (status, text) = try await Self.netsimIntoAFile("test Scenarios/refused.scn --json /dev/stdout")
        #expect(status == 0, "\(text)")
        let lines = text.components(separatedBy: "\n")
        #expect(lines.first?.hasPrefix("netsim test: 1 run of 1 scenario") == true, "\(text.prefix(300))")
        let start = try #require(lines.firstIndex(of: "{"), "\(text)")
        let end = try #require(lines.lastIndex(of: "}"), "\(text)")
        #expect(start > 0 && end > start)
        #expect((try? JSONSerialization.jsonObject(with: Data(lines[start...end].joined(separator: "\n").utf8))) != nil)
        #expect(lines.suffix(2) == ["1 passed, 0 failed", ""], "\(lines.suffix(3))")
    }

    @Test func theEventLogFollowsTheReport() async throws {
        let (status, text) = try await Self.netsimIntoAFile("run Scenarios/refused.scn --events /dev/stdout")
        #expect(status == 0, "\(text)")
        #expect(text.hasPrefix("netsim run Scenarios/refused.scn"), "\(text.prefix(200))")
        let events = text.components(separatedBy: "\n").filter { $0.hasPrefix("{\"t\":") }
        #expect(!events.isEmpty)
        for line in events {
            #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) != nil, "a whole JSON line: \(line)")
        }
        #expect(events.last?.contains(#""event":"listener_closed""#) == true, "\(events.last ?? "none")")
    }
}
