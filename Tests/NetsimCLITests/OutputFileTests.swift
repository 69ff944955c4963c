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

    @Test func anUpstreamOnPortZeroIsRefused() {
        #expect(Self.message { _ = try RelayCommand.parse(["--upstream", "127.0.0.1:0"]) }
            .contains("--upstream 127.0.0.1:0: give the server's port (1-65535)"))
    }
}
