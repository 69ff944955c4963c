import ArgumentParser
import Foundation
import Testing
@testable import netsim

/// Files the commands write are checked before anything runs: a missing folder or a directory
/// is a usage error naming the option, not a failure after the run ("You don't have permission"
/// from Foundation for a folder that does not exist, as `--events` said, or the whole NSError of
/// `--json`, printed once the scenario had run).
@Suite("output files are checked before running")
struct OutputFileTests {
    static func message(_ parse: () throws -> Void) -> String {
        do {
            try parse()
            return "no error"
        } catch {
            return RelayCommand.message(for: error)
        }
    }

    @Test func aMissingFolderOrADirectoryIsAUsageErrorNamingTheOption() throws {
        let folder = FileManager.default.temporaryDirectory.path
        #expect(Self.message { _ = try RunCommand.parse(["Scenarios/server-fin.scn", "--json", "/nonexistent/x.json"]) }
            .contains("--json /nonexistent/x.json: there is no folder /nonexistent to write it in"))
        #expect(Self.message { _ = try TestCommand.parse(["Scenarios/", "--junit", folder]) }
            .contains("--junit \(folder): is a directory; give a file name"))
        #expect(Self.message { _ = try RelayCommand.parse(["--upstream", "127.0.0.1:9", "--events", "/nonexistent/dir/x.jsonl"]) }
            .contains("--events /nonexistent/dir/x.jsonl: there is no folder /nonexistent/dir to write it in"))
        #expect(Self.message { _ = try RelayCommand.parse(["--upstream", "127.0.0.1:9", "--events", "-", "--pcap", "\(folder)/netsim-\(UUID()).pcap"]) } == "no error")
    }

    /// `-` is standard output once, for what may go there (QA 63): the relay's capture alone, not
    /// beside its events nor with TLS secrets (a file named `-.keys`); never a shell's capture or
    /// statistics, which mixed with the command's output or made a file named `-`.
    @Test func standardOutputTakesOneOutputThatMayGoThere() {
        func relay(_ arguments: [String]) -> String { Self.message { _ = try RelayCommand.parse(["--upstream", "127.0.0.1:9"] + arguments) } }
        #expect(relay(["--pcap", "-"]) == "no error")
        #expect(relay(["--pcap", "-", "--events", "-"]).contains("--pcap - and --events - would both write to standard output"))
        // By its other names too (QA 67: the JSON lines went into the capture, which tshark
        // called damaged). The test process's standard output is open, whatever it is.
        for name in ["/dev/stdout", "/dev/fd/1"] {
            #expect(relay(["--pcap", "-", "--events", name]).contains("--pcap - and --events \(name) would both write to standard output"), "\(name)")
        }
        #expect(relay(["--pcap", "-", "--tls", "intercept"]).contains("--pcap - with --tls intercept: the TLS secrets are written beside the capture"))
        for option in ["--pcap", "--stats", "--events"] {
            #expect(Self.message { _ = try ShellCommand.parse([option, "-", "--", "true"]) }
                .contains("\(option) -: standard output holds the command's own output"), "\(option)")
        }
    }

    /// QA 36: `--json` naming the scenario wrote over it, and two reports naming one file kept
    /// only the last. Both are usage errors now; `/dev/stdout` may repeat.
    @Test func aReportOverAnInputOrAnotherReportIsAUsageError() {
        let folder = FileManager.default.temporaryDirectory.path
        #expect(Self.message { _ = try RunCommand.parse(["Scenarios/server-fin.scn", "--json", "Scenarios/server-fin.scn"]) }
            .contains("--json Scenarios/server-fin.scn: that is Scenarios/server-fin.scn, an input of this command"))
        #expect(Self.message { _ = try TestCommand.parse(["scenarios/SERVER-FIN.scn", "--html", "./Scenarios/server-fin.scn"]) }
            .contains("--html ./Scenarios/server-fin.scn: that is"))
        #expect(Self.message { _ = try TestCommand.parse(["Scenarios/", "--json", "\(folder)/r.json", "--html", "\(folder)/r.json"]) }
            .contains("--html \(folder)/r.json: --json names that file too"))
        #expect(Self.message { _ = try TestCommand.parse(["Scenarios/", "--json", "/dev/stdout", "--junit", "/dev/stdout"]) } == "no error")
    }

    /// A report named over the scenario is refused before the writability probe, which opens
    /// the path for writing and makes and removes a file beside it (QA 60: the scenario's
    /// folder changed, its modification time with it).
    @Test func aReportOverAnInputIsRefusedBeforeAnythingIsWritten() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-input-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let scenario = folder.appendingPathComponent("x.scn").path
        try "name: x\n".write(toFile: scenario, atomically: true, encoding: .utf8)
        // An old time, which any change to the folder replaces with now.
        let old = Date(timeIntervalSince1970: 1_000_000_000)
        try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: folder.path)
        for parse in [{ _ = try RunCommand.parse([scenario, "--json", scenario]) }, { _ = try TestCommand.parse([scenario, "--junit", scenario]) }] {
            #expect(Self.message(parse).contains("an input of this command"))
        }
        #expect(try FileManager.default.attributesOfItem(atPath: folder.path)[.modificationDate] as? Date == old)
    }

    /// A link to a report not written yet is that report (QA 52: `--pcap l.pcap --events t.pcap`
    /// with l.pcap → t.pcap passed, and the events overwrote the capture, exit 0); so is a
    /// chain of links, relative ones included.
    @Test func aLinkToAnotherReportIsThatReport() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-links-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createSymbolicLink(atPath: "\(folder)/l.pcap", withDestinationPath: "\(folder)/t.pcap")
        try FileManager.default.createSymbolicLink(atPath: "\(folder)/m.pcap", withDestinationPath: "l.pcap")
        for link in ["l.pcap", "m.pcap"] {
            #expect(Self.message { _ = try RunCommand.parse(["Scenarios/server-fin.scn", "--pcap", "\(folder)/\(link)", "--events", "\(folder)/t.pcap"]) }
                .contains("--pcap \(folder)/\(link): --events names that file too"), "\(link)")
        }
        #expect(Self.message { _ = try RunCommand.parse(["Scenarios/server-fin.scn", "--pcap", "\(folder)/l.pcap", "--events", "\(folder)/u.jsonl"]) } == "no error")
    }

    /// A hard link is the file under another name (QA 67: `--events hard --pcap file` passed,
    /// and the events overwrote the capture).
    @Test func aHardLinkToAnotherReportIsThatReport() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-hard-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try "an earlier capture".write(toFile: "\(folder)/run.pcap", atomically: true, encoding: .utf8)
        try FileManager.default.linkItem(atPath: "\(folder)/run.pcap", toPath: "\(folder)/hard")
        #expect(Self.message { _ = try RelayCommand.parse(["--upstream", "127.0.0.1:9", "--events", "\(folder)/hard", "--pcap", "\(folder)/run.pcap"]) }
            .contains("--pcap \(folder)/run.pcap: --events names that file too"))
        #expect(Self.message { _ = try RunCommand.parse(["Scenarios/server-fin.scn", "--json", "\(folder)/run.pcap", "--html", "\(folder)/hard"]) }
            .contains("--html \(folder)/hard: --json names that file too"))
    }

    /// An empty name (`--pcap "$UNSET"`) is a usage error before anything runs. `netsim run
    /// --json ""` ran the whole scenario first; `relay --pcap ""` said `cannot write the
    /// capture : : No such file or directory`.
    @Test func anEmptyFileNameIsAUsageError() {
        let cases: [(String, () throws -> Void)] = [
            ("--json", { _ = try RunCommand.parse(["Scenarios/server-fin.scn", "--json", ""]) }),
            ("--pcap", { _ = try RelayCommand.parse(["--upstream", "127.0.0.1:9", "--pcap", ""]) }),
            ("--events", { _ = try ProxyCommand.parse(["--events", ""]) }),
            ("--stats", { _ = try ShellCommand.parse(["--stats", ""]) }),
            ("--events", { _ = try ShellCommand.parse(["--events", ""]) }),
            ("--junit", { _ = try TestCommand.parse(["Scenarios/", "--junit", ""]) }),
        ]
        for (option, parse) in cases {
            #expect(Self.message(parse).contains("\(option) was given an empty file name; give one, e.g. \(option) "), "\(option)")
        }
        #expect(Self.message { _ = try TestCommand.parse(["Scenarios/", "--pcap", ""]) }.contains("--pcap was given an empty folder name"))
    }

    /// `-` is standard output for `netsim relay --events`; `netsim run` and `netsim test` print
    /// their report there, and took `-` as a file of that name in the working directory.
    @Test func aDashIsRefusedWhereStandardOutputHoldsTheReport() {
        #expect(Self.message { _ = try RunCommand.parse(["Scenarios/server-fin.scn", "--events", "-"]) }
            .contains("--events -: standard output holds the run's report; give a file name (or /dev/stdout to mix them)"))
        #expect(Self.message { _ = try TestCommand.parse(["Scenarios/", "--json", "-"]) }
            .contains("--json -: standard output holds the suite's report; give a file name"))
    }

    #if os(Linux)
    /// access(2) says yes to root for /proc (or a read-only mount): the run went ahead and its
    /// report failed afterwards. Creating the file is tried instead.
    @Test func aFolderWhereNothingCanBeCreatedIsAUsageError() {
        #expect(Self.message { _ = try TestCommand.parse(["Scenarios/", "--json", "/proc/netsim-report.json"]) }
            .contains("--json /proc/netsim-report.json: cannot create it in /proc:"))
        // It opens for writing, as root; replacing it needs a file beside it (found after the run).
        #expect(Self.message { _ = try TestCommand.parse(["Scenarios/", "--json", "/proc/version"]) }
            .contains("--json /proc/version: cannot replace it: /proc takes no new file (a report is written beside it"))
    }
    #endif

    /// A path through a file names the file, not a missing folder (QA 52).
    @Test func aPathThroughAFileSaysSo() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-\(UUID().uuidString).txt").path
        try "x".write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        #expect(Self.message { _ = try RunCommand.parse(["Scenarios/server-fin.scn", "--events", "\(file)/x.jsonl"]) }
            .contains("--events \(file)/x.jsonl: \(file) is a file, not a folder to write it in"))
    }

    /// Reports are written through a temporary file and a rename, which replaced a symlink with
    /// a file (and, as root, `/dev/stdout` itself). A symlink and a FIFO are written in place.
    @Test func aSymlinkAndAFIFOAreWrittenInPlace() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-out-\(UUID())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try "old, longer than the new\n".write(toFile: "\(folder)/target", atomically: false, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: "\(folder)/link", withDestinationPath: "target")
        try writeOrFail("new\n", to: "\(folder)/link")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: "\(folder)/link") == "target")
        #expect(try String(contentsOfFile: "\(folder)/target", encoding: .utf8) == "new\n")

        let fifo = "\(folder)/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        // The read end, opened without waiting for a writer: a write that went elsewhere leaves
        // it empty rather than hanging the test.
        let reader = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        #expect(reader >= 0)
        defer { close(reader) }
        try writeOrFail("through the pipe\n", to: fifo)
        var received = [UInt8](repeating: 0, count: 64)
        let count = read(reader, &received, received.count)
        #expect(String(decoding: received.prefix(max(0, count)), as: UTF8.self) == "through the pipe\n")
        var status = stat()
        #expect(lstat(fifo, &status) == 0 && status.st_mode & S_IFMT == S_IFIFO)

        // A dangling symlink: its target is made, as a shell's redirection makes it (the
        // in-place write failed after the run); one into a missing folder is refused up front.
        try FileManager.default.createSymbolicLink(atPath: "\(folder)/dangling", withDestinationPath: "made.json")
        #expect(Self.message { try OutputFile.check("\(folder)/dangling", option: "--json") } == "no error")
        try writeOrFail("made\n", to: "\(folder)/dangling")
        #expect(try String(contentsOfFile: "\(folder)/made.json", encoding: .utf8) == "made\n")
        try FileManager.default.createSymbolicLink(atPath: "\(folder)/nowhere", withDestinationPath: "no-folder/x.json")
        #expect(Self.message { try OutputFile.check("\(folder)/nowhere", option: "--json") }.contains("there is no folder \(folder)/no-folder"))

        try writeOrFail("plain\n", to: "\(folder)/plain.json")
        #expect(try String(contentsOfFile: "\(folder)/plain.json", encoding: .utf8) == "plain\n")
    }

    @Test func anUpstreamOnPortZeroIsRefused() {
        #expect(Self.message { _ = try RelayCommand.parse(["--upstream", "127.0.0.1:0"]) }
            .contains("--upstream 127.0.0.1:0: give the server's port (1-65535)"))
    }
}

/// `netsim test --pcap DIR` names each run's capture after it, readably: `lockscreen [go]`
/// was `lockscreen--go-.pcap`.
@Suite("capture file names")
struct PcapFolderTests {
    @Test func eachRunsCaptureIsNamedAfterItWithOneDashPerRunOfOtherCharacters() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-pcaps-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // QA 37: `ex [a.b]` and `ex [a-b]` make one file name; the second overwrote the first.
        let names = ["lockscreen [go]", "lockscreen [go]", "server-fin", "a/b: c_d", "[]", "ex [a.b]", "ex [a-b]", "ex-a-b-2"]
        let paths = try PcapFolder.paths(for: names, in: folder).map { $0.map { ($0 as NSString).lastPathComponent } }
        #expect(paths == ["lockscreen-go.pcap", "lockscreen-go-2.pcap", "server-fin.pcap", "a-b-c_d.pcap", "run.pcap",
                          "ex-a-b.pcap", "ex-a-b-2.pcap", "ex-a-b-2-2.pcap"])
        var isFolder: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder) && isFolder.boolValue)
        #expect(try PcapFolder.paths(for: names, in: nil).allSatisfy { $0 == nil })
    }

    /// A folder that cannot be made is `--pcap`'s usage error before anything runs (it failed
    /// after the suite had started, with Foundation's "The operation could not be completed").
    @Test func aCaptureFolderThatCannotBeMadeIsAUsageErrorBeforeTheRun() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-file-\(UUID())").path
        try "x".write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        #expect(OutputFileTests.message { _ = try TestCommand.parse(["Scenarios/", "--pcap", file]) }
            .contains("--pcap \(file): is a file; give a folder for the captures"))
        #expect(OutputFileTests.message { _ = try TestCommand.parse(["Scenarios/", "--pcap", file + "/inside"]) }
            .contains("--pcap \(file)/inside: cannot create \(file)/inside: Not a directory"))
    }
}
