import ArgumentParser
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import NetsimCore

/// `netsim junit-merge`: one JUnit file from the files of several shards (`netsim test --shard`),
/// for CI systems or people that want a single report. Every outermost `<testsuite>` of every
/// input is kept as it is, under one `<testsuites>` whose totals are their sums.
struct JUnitMergeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "junit-merge",
        abstract: "Merge JUnit XML files (one per shard) into one.",
        discussion: """
            Example:
              netsim test Scenarios/ --shard 1/2 --junit results-1.xml     (on one runner)
              netsim test Scenarios/ --shard 2/2 --junit results-2.xml     (on another)
              netsim junit-merge --output results.xml results-*.xml

            GitLab merges the JUnit reports of parallel jobs by itself; see docs/running.md.
            """)

    @Option(help: ArgumentHelp("The merged file to write. Example: --output results.xml", valueName: "file"))
    var output: String

    @Option(help: ArgumentHelp("The name of the merged <testsuites>. Default: netsim", valueName: "name"))
    var name = "netsim"

    @Argument(help: ArgumentHelp("JUnit XML files (netsim's, or any with <testsuite> elements).", valueName: "file"))
    var files: [String]

    /// A file named twice (overlapping globs) is merged once, and the output may not be an input
    /// (`--output results.xml results*.xml` after an earlier merge): either counted tests twice.
    func validate() throws {
        // XML 1.0 has no way to write them: the merged file would not parse (QA 65).
        if let bad = name.unicodeScalars.first(where: { $0.value < 0x20 && ![0x09, 0x0A, 0x0D].contains($0.value) || $0.value == 0x7F }) {
            throw ValidationError("--name holds the control character U+\(String(format: "%04X", bad.value)), which XML cannot carry; give a name of printable characters")
        }
        if let again = files.first(where: { Self.same($0, output) }) {
            throw ValidationError("\(again) is also --output: leave the merged file out of the files to merge (it would count its tests twice)")
        }
    }

    /// One file by two names: a symbolic link, `./`, or a hard link (the same inode).
    static func same(_ a: String, _ b: String) -> Bool {
        var (first, second) = (stat(), stat())
        if stat(a, &first) == 0, stat(b, &second) == 0 { return first.st_dev == second.st_dev && first.st_ino == second.st_ino }
        return URL(fileURLWithPath: a).resolvingSymlinksInPath().path == URL(fileURLWithPath: b).resolvingSymlinksInPath().path
    }

    func run() throws {
        var merge = JUnitMerge()
        var merged: [String] = []
        for file in files {
            if let earlier = merged.first(where: { Self.same($0, file) }) {
                StandardStream.error.write("netsim junit-merge: \(file) is \(earlier), named again; merged once\n")
                continue
            }
            merged.append(file)
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: file, isDirectory: &isFolder), isFolder.boolValue {
                throw RuntimeError("\(file) is a folder, not a JUnit file; name the files in it (\(file)/*.xml); nothing was merged")
            }
            let data: Data
            do {
                data = try Data(contentsOf: URL(fileURLWithPath: file))
            } catch {
                throw RuntimeError("\(file) cannot be read: \(error.localizedDescription)")
            }
            try merge.add(data, from: file)
        }
        var xml = #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n"
        let totals = merge.totals
        xml += #"<testsuites name="\#(Self.escape(name))" tests="\#(totals.tests)" failures="\#(totals.failures)" errors="\#(totals.errors)" skipped="\#(totals.skipped)" time="\#(String(format: "%.3f", totals.seconds))">"# + "\n"
        xml += merge.suites.map { "  " + $0 }.joined(separator: "\n") + "\n</testsuites>\n"
        try writeOrFail(xml, to: output)
        for warning in merge.warnings { StandardStream.error.write("netsim junit-merge: \(warning)\n") }
        let count = merge.suites.count
        print("netsim junit-merge: \(count) suite\(count == 1 ? "" : "s"), \(totals.tests) test\(totals.tests == 1 ? "" : "s"), \(totals.failures) failed\(totals.errors > 0 ? ", \(totals.errors) could not run" : "") → \(output)")
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }
}
