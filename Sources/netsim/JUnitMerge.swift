import Foundation
import NetsimCore
#if canImport(FoundationXML)
import FoundationXML
#endif

/// The suites of several JUnit files and their totals. A file that is empty or not well-formed
/// is refused by name, line and column: it is what a shard that died or was cut off while
/// writing leaves, and merging what is left of it would hide its tests and failures from CI.
/// Suites nested in a suite (Maven Surefire, some pytest plugins) stay inside their outermost
/// suite and are counted once.
struct JUnitMerge {
    /// Each outermost `<testsuite>`, as XML.
    private(set) var suites: [String] = []
    private(set) var totals = JUnitTotals()
    /// What was merged but may not say what its writer meant (a time that is not a number).
    var warnings: [String] { totals.warnings }

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
        // By local name: a writer that puts its elements in a namespace (xmlns="…") writes
        // the same suites (QA 65: "has no <testsuite>").
        let found = try document.nodes(forXPath: "//*[local-name()='testsuite' and not(ancestor::*[local-name()='testsuite'])]")
        if found.isEmpty { throw RuntimeError("\(file) has no <testsuite>") }
        for case let suite as XMLElement in found {
            totals.add(suite, from: file)
            // As written: its whitespace kept, empty elements left empty (<skipped/>).
            suites.append(suite.xmlString(options: .nodeCompactEmptyElement))
        }
    }
}

extension JUnitMerge {
    /// No external entity or DTD is loaded, and no entity is substituted; whitespace between
    /// elements is kept, so each suite is written back as it was laid out.
    static let reading: XMLNode.Options = [.nodeLoadExternalEntitiesNever, .nodePreserveWhitespace]

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
    var warnings: [String] = []

    mutating func add(_ suite: XMLElement, from file: String) {
        func count(_ attribute: String, _ element: String) -> Int {
            let xpath = ".//*[local-name()='testcase']" + (element.isEmpty ? "" : "/*[local-name()='\(element)']")
            return Self.attribute(attribute, of: suite).flatMap(Int.init) ?? ((try? suite.nodes(forXPath: xpath))?.count ?? 0)
        }
        tests += count("tests", "")
        failures += count("failures", "failure")
        errors += count("errors", "error")
        skipped += count("skipped", "skipped")
        if let time = Self.attribute("time", of: suite) {
            if let value = Self.seconds(time) {
                seconds += value
            } else {
                let name = Self.attribute("name", of: suite).map { " '\($0)'" } ?? ""
                warnings.append("\(file): suite\(name) has time=\"\(time)\", not a number of seconds; counted as 0")
            }
        }
    }

    /// An attribute's value by its name. (`attribute(forName:)` finds nothing on an element in
    /// a default namespace, in swift-corelibs-foundation.)
    static func attribute(_ name: String, of element: XMLElement) -> String? {
        element.attributes?.first { $0.name == name }?.stringValue
    }

    /// A suite's `time`: a number, or one with thousands separators as Surefire writes in some
    /// locales (`1,234.5`); nil for anything else.
    static func seconds(_ text: String) -> Double? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let value = Double(trimmed) { return value }
        guard trimmed.range(of: #"^[0-9]{1,3}(,[0-9]{3})+(\.[0-9]*)?$"#, options: .regularExpression) != nil else { return nil }
        return Double(trimmed.replacingOccurrences(of: ",", with: ""))
    }
}
