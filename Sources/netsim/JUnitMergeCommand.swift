import ArgumentParser
import Foundation
import NetsimCore
#if canImport(FoundationXML)
import FoundationXML
#endif

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
        if let again = files.first(where: { Self.same($0, output) }) {
            throw ValidationError("\(again) is also --output: leave the merged file out of the files to merge (it would count its tests twice)")
        }
    }

    static func same(_ a: String, _ b: String) -> Bool {
        URL(fileURLWithPath: a).resolvingSymlinksInPath().path == URL(fileURLWithPath: b).resolvingSymlinksInPath().path
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
        let count = merge.suites.count
        print("netsim junit-merge: \(count) suite\(count == 1 ? "" : "s"), \(totals.tests) tests, \(totals.failures) failed\(totals.errors > 0 ? ", \(totals.errors) could not run" : "") → \(output)")
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "<", with: "&lt;")
    }
}

/// The suites of several JUnit files and their totals. A file that is empty or not well-formed
/// is refused by name, line and column: it is what a shard that died or was cut off while
/// writing leaves, and merging what is left of it would hide its tests and failures from CI.
/// Suites nested in a suite (Maven Surefire, some pytest plugins) stay inside their outermost
/// suite and are counted once.
struct JUnitMerge {
    /// Each outermost `<testsuite>`, as XML.
    private(set) var suites: [String] = []
    private(set) var totals = JUnitTotals()

    mutating func add(_ data: Data, from file: String) throws {
        if data.allSatisfy({ [0x20, 0x09, 0x0A, 0x0D].contains($0) }) {
            throw RuntimeError("\(file) is empty: a shard that stopped before writing its report leaves such a file; nothing was merged")
        }
        // Entities are never loaded nor expanded: XMLDocument's default read the files and
        // fetched the URLs a DOCTYPE named into the merged report (QA 65), and a report a pull
        // request's tests wrote is untrusted. JUnit writers write no DOCTYPE; one that says
        // more than a name is refused before anything else reads the file.
        let document = try? XMLDocument(data: data, options: Self.reading)
        if let doctype = document.flatMap(Self.doctype), doctype.range(of: #"^<!DOCTYPE\s+[^\s\[>]+\s*>$"#, options: .regularExpression) == nil {
            throw RuntimeError("\(file) has a DOCTYPE with declarations or an external DTD (\(doctype.prefix(80).split(separator: "\n").joined(separator: " "))…): "
                + "JUnit reports have none, and junit-merge neither loads nor expands entities (an external one reads files and URLs); nothing was merged")
        }
        // XMLDocument recovers from broken XML (a truncated file became a suite with fewer
        // tests, exit 0), so a strict parse goes first.
        let parser = XMLParser(data: data)
        parser.shouldResolveExternalEntities = false
        if !parser.parse() || parser.parserError != nil {
            let code = (parser.parserError as NSError?)?.code ?? 0
            throw RuntimeError("\(file):\(parser.lineNumber):\(parser.columnNumber): not well-formed XML (libxml2 error \(code)); a report cut off while it was written looks like this; nothing was merged")
        }
        guard let document else { throw RuntimeError("\(file): not XML that can be read; nothing was merged") }
        let found = try document.nodes(forXPath: "//testsuite[not(ancestor::testsuite)]")
        if found.isEmpty { throw RuntimeError("\(file) has no <testsuite>") }
        for case let suite as XMLElement in found {
            totals.add(suite)
            suites.append(suite.xmlString)
        }
    }
}

extension JUnitMerge {
    /// No external entity or DTD is loaded, and no entity is substituted.
    static let reading: XMLNode.Options = .nodeLoadExternalEntitiesNever

    /// The document's DOCTYPE as written, nil when it has none. (`XMLDocument.dtd` traps in
    /// swift-corelibs-foundation; the DTD is found among the document's children.)
    static func doctype(_ document: XMLDocument) -> String? {
        document.children?.first { $0.kind == .DTDKind }.map { $0.xmlString.trimmingCharacters(in: .whitespacesAndNewlines) }
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
        tests += count("tests", ".//testcase")
        failures += count("failures", ".//testcase/failure")
        errors += count("errors", ".//testcase/error")
        skipped += count("skipped", ".//testcase/skipped")
        seconds += suite.attribute(forName: "time")?.stringValue.flatMap(Double.init) ?? 0
    }
}
