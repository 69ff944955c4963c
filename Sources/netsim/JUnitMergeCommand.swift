import ArgumentParser
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// `netsim junit-merge`: one JUnit file from the files of several shards (`netsim test --shard`),
/// for CI systems or people that want a single report. Every `<testsuite>` of every input is
/// kept as it is, under one `<testsuites>` whose totals are their sums.
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

    func run() throws {
        var suites: [String] = []
        var totals = JUnitTotals()
        for file in files {
            let document: XMLDocument
            do {
                document = try XMLDocument(contentsOf: URL(fileURLWithPath: file))
            } catch {
                throw RuntimeError("\(file) is not a JUnit XML file netsim can read: \(error.localizedDescription)")
            }
            let found = (try? document.nodes(forXPath: "//testsuite")) ?? []
            if found.isEmpty { throw RuntimeError("\(file) has no <testsuite>") }
            for case let suite as XMLElement in found {
                totals.add(suite)
                suites.append("  " + suite.xmlString)
            }
        }
        var xml = #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n"
        xml += #"<testsuites name="\#(Self.escape(name))" tests="\#(totals.tests)" failures="\#(totals.failures)" errors="\#(totals.errors)" skipped="\#(totals.skipped)" time="\#(String(format: "%.3f", totals.seconds))">"# + "\n"
        xml += suites.joined(separator: "\n") + "\n</testsuites>\n"
        try writeOrFail(xml, to: output)
        print("netsim junit-merge: \(suites.count) suite\(suites.count == 1 ? "" : "s"), \(totals.tests) tests, \(totals.failures) failed → \(output)")
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "<", with: "&lt;")
    }
}

/// The sums over merged suites: their attributes, or their test cases counted when a writer
/// left an attribute out.
struct JUnitTotals {
    var tests = 0, failures = 0, errors = 0, skipped = 0
    var seconds = 0.0

    mutating func add(_ suite: XMLElement) {
        func count(_ attribute: String, _ xpath: String) -> Int {
            suite.attribute(forName: attribute)?.stringValue.flatMap(Int.init) ?? ((try? suite.nodes(forXPath: xpath))?.count ?? 0)
        }
        tests += count("tests", "testcase")
        failures += count("failures", "testcase/failure")
        errors += count("errors", "testcase/error")
        skipped += count("skipped", "testcase/skipped")
        seconds += suite.attribute(forName: "time")?.stringValue.flatMap(Double.init) ?? 0
    }
}
