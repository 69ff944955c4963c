import ArgumentParser
import Foundation
import NetsimFaults
import NetsimLoopback
import Testing
@testable import netsim

/// `netsim check FILE…`: `FILE: ok` per valid file, every error of the others, exit 2 when any is invalid.
@Suite("netsim check")
struct CheckCommandTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let invalid = "Fixtures/scenarios/invalid"

    static let valid = """
        name: check-me
        description: A valid scenario for `netsim check`.
        upstream:
          routes:
            - path: /
        client:
          driver: naive
        timeline:
          - request: one
            path: /
        expect:
          - request: one
            status: 200

        """

    /// A valid scenario in a temporary file; returns its path.
    static func writeValid() throws -> String {
        let path = NSTemporaryDirectory() + "netsim-check-\(UUID().uuidString).scn"
        try valid.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func validFilesPrintOk() throws {
        let path = try Self.writeValid()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let report = CheckCommand.check([path, path])
        #expect(report == CheckCommand.Report(output: "\(path): ok\n\(path): ok\n", errors: "", allValid: true))
    }

    @Test func invalidFilesPrintTheirDiagnostics() throws {
        let valid = try Self.writeValid()
        defer { try? FileManager.default.removeItem(atPath: valid) }
        let broken = Self.root.appendingPathComponent("\(Self.invalid)/unknown-key-top-level.scn").path
        let report = CheckCommand.check([broken, valid, "no/such/file.scn"])
        #expect(report.output == "\(valid): ok\n")
        #expect(report.errors.hasPrefix("\(broken):11:1: error: unknown key 'timelin' in the scenario\n"))
        #expect(report.errors.hasSuffix("no/such/file.scn: error: no such file\n"))
        #expect(!report.allValid)
    }

    /// A folder without scenarios is one more error among the others' (exit 2), not a usage error
    /// that stops the check (it printed `netsim <subcommand>`'s usage and exited 64).
    @Test func aFolderWithoutScenariosIsReportedWithTheOthers() throws {
        let folder = NSTemporaryDirectory() + "netsim-check-empty-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder + "/sub", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try "not a scenario".write(toFile: folder + "/sub/notes.txt", atomically: true, encoding: .utf8)
        let valid = try Self.writeValid()
        defer { try? FileManager.default.removeItem(atPath: valid) }
        let report = CheckCommand.check(paths: [folder, valid])
        #expect(report.output == "\(valid): ok\n")
        #expect(report.errors == "\(folder): error: no .scn files in this folder (or its subfolders)\n")
        #expect(!report.allValid)
    }

    /// QA 35: a capture cut short (or cut by its snaplen) starts like a capture, so `check` said
    /// ok, and `run` then refused it (exit 2, with no place). Now `check` reads it as the run does.
    /// Cut after whole packets, it is refused too: `netsim replay` serves those with a note, but a
    /// run had no place for it, and a request past the cut waited out the client's timeout with
    /// nothing said (QA 68).
    @Test func aReplayCaptureTheRunCannotReplayFailsTheCheckAtItsPlace() throws {
        let folder = NSTemporaryDirectory() + "netsim-check-replay-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let whole = try Data(contentsOf: Self.root.appendingPathComponent("Fixtures/pcap/zeek-http-get.pcap"))
        try whole.prefix(60).write(to: URL(fileURLWithPath: folder + "/cut.pcap"))
        try whole.write(to: URL(fileURLWithPath: folder + "/whole.pcap"))
        try whole.prefix(1000).write(to: URL(fileURLWithPath: folder + "/late.pcap"))
        var paths: [String] = []
        for capture in ["cut", "whole", "late"] {
            let source = Self.valid.replacingOccurrences(of: "  routes:\n    - path: /", with: "  replay: \(capture).pcap")
            paths.append(folder + "/\(capture).scn")
            try source.write(toFile: paths[paths.count - 1], atomically: true, encoding: .utf8)
        }
        let report = CheckCommand.check(paths)
        #expect(report.output == "\(paths[1]): ok\n")
        #expect(report.errors.hasPrefix("\(paths[0]):4:11: error: cannot replay 'cut.pcap': the file is truncated (libpcap: "), "\(report.errors)")
        #expect(report.errors.contains("\(paths[2]):4:11: error: cannot replay 'late.pcap': the file ends in the middle of a packet, after 5 whole ones (libpcap: "), "\(report.errors)")
        #expect(report.errors.contains("a scenario replays whole captures: keep the whole packets with `editcap "), "\(report.errors)")
        #expect(!report.allValid)
    }

    /// `run` and `test` find `scenarios/LockScreen.scn`; `check` said "no such file".
    @Test func aPathIsFoundAsRunFindsIt() async throws {
        let result = try await Self.run(["scenarios/LockScreen.scn", "SCENARIOS"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix("Scenarios/lockscreen.scn: ok\nScenarios/"), "\(result.stdout)")
    }

    /// What `netsim test` runs from the paths it is given: a file named twice (directly and in
    /// its folder) ran twice, as two test cases; `X.SCN` was skipped without a word.
    @Test func testCollectsEachFileOnceWhateverTheCaseOfItsExtension() throws {
        let folder = NSTemporaryDirectory() + "netsim-collect-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for name in ["a.scn", "B.SCN", "notes.txt"] { try Self.valid.write(toFile: "\(folder)/\(name)", atomically: true, encoding: .utf8) }
        let (files, notFound) = ScenarioFiles.collect([folder, "\(folder)/a.scn", "\(folder)/./B.SCN"])
        #expect(files == ["\(folder)/B.SCN", "\(folder)/a.scn"] && notFound == nil)
    }

    @Test func parsesOneOrMoreFiles() throws {
        #expect(try CheckCommand.parse(["a.scn", "b.scn"]).files == ["a.scn", "b.scn"])
        #expect(throws: (any Error).self) { try CheckCommand.parse([]) }
    }

    // MARK: The process

    static func run(_ arguments: [String]) async throws -> NetsimProcess.Result {
        try await NetsimProcess.run(["check"] + arguments)
    }

    @Test
    func exitsZeroWhenEveryFileIsValid() async throws {
        let path = try Self.writeValid()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let result = try await Self.run([path])
        #expect(result.status == 0)
        #expect(result.stdout == "\(path): ok\n")
        #expect(result.stderr == "")
    }

    @Test
    func exitsTwoAndPrintsTheRenderedErrors() async throws {
        let path = try Self.writeValid()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let fixture = "\(Self.invalid)/multiple-errors"
        let expected = FaultCatalog.expandingPlaceholder(in: try String(contentsOf: Self.root.appendingPathComponent("\(fixture).expected"), encoding: .utf8))
        let result = try await Self.run([path, "\(fixture).scn"])
        #expect(result.status == 2)
        #expect(result.stdout == "\(path): ok\n")
        #expect(result.stderr == expected)
    }

    /// A folder is checked as `netsim test` collects it: every .scn in it, in name order.
    @Test
    func aFolderChecksEveryScenarioInIt() async throws {
        let result = try await Self.run(["Scenarios"])
        #expect(result.status == 0, "\(result.stderr)")
        let bundled = try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent("Scenarios").path)
            .filter { $0.hasSuffix(".scn") }.sorted()
        #expect(result.stdout == bundled.map { "Scenarios/\($0): ok\n" }.joined())
    }
}
