import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import Testing
@testable import NetsimRunner

/// The JUnit report: whatever text from clients and servers it holds (error messages, bodies),
/// it stays XML a CI can parse; a run netsim could not make is an `<error>`, not a `<failure>`.
@Suite("JUnit report")
struct JUnitReportTests {
    @Test func everyCharacterXMLForbidsIsReplacedAndTheReportParses() {
        let hostile = "a\u{0}b\u{1b}[31mc\u{8}d\u{FFFE}e\u{FFFF}f<g>&\"'\r\n\té😀"
        let escaped = JUnitReport.escape(hostile)
        #expect(escaped == "a?b?[31mc?d?e?f&lt;g&gt;&amp;&quot;&apos;?\n\té😀")
        let document = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><failure message=\"\(escaped)\">\(escaped)</failure>"
        #expect(XMLParser(data: Data(document.utf8)).parse(), "\(escaped)")
    }

    @Test func aRunNetsimCouldNotMakeIsAnErrorNotAFailure() {
        let cases = [
            JUnitReport.Case(name: "ok", file: "a.scn", seconds: 1, failure: nil),
            JUnitReport.Case(name: "bad", file: "b.scn", seconds: 1, failure: "2 of 3 checks failed"),
            JUnitReport.Case(name: "broken", file: "c.scn", seconds: 0, failure: nil, error: "netsim could not run it: h2c is not supported"),
        ]
        let xml = JUnitReport.render(cases)
        #expect(xml.contains(#"<testsuites name="netsim" tests="3" failures="1" errors="1""#), "\(xml)")
        #expect(xml.contains(#"<error message="netsim could not run it: h2c is not supported">"#), "\(xml)")
        #expect(XMLParser(data: Data(xml.utf8)).parse())
        #expect(cases.filter(\.didNotPass).map(\.name) == ["bad", "broken"])
    }

    /// A failed run's report starts with its checks in order, passed ones too: the `message` is
    /// the one given (which check failed), not that first line.
    @Test func theFailureMessageIsTheOneGivenNotTheReportsFirstLine() {
        let report = "✔ request r: status 200\n✘ request r: body contains \"nope\""
        let xml = JUnitReport.render([JUnitReport.Case(name: "r", file: "r.scn", seconds: 1, failure: report,
                                                       message: "1 of 2 checks failed, first: request r: body contains \"nope\"")])
        #expect(xml.contains(#"<failure message="1 of 2 checks failed, first: request r: body contains &quot;nope&quot;">"#), "\(xml)")
    }
}
