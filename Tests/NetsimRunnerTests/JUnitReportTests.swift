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

    /// A scenario not run here is `<skipped>` with why, counted apart (QA 58: it vanished); the
    /// suite's time is the wall time given, with when and where it ran; a case's `classname` is
    /// its file as a dotted path, which Jenkins splits into package and class (QA 58: `scn`).
    @Test func skippedCasesTheSuitesWallTimeAndDottedClassNames() {
        let cases = [
            JUnitReport.Case(name: "lockscreen", file: "Scenarios/lockscreen.scn", seconds: 3, failure: nil),
            JUnitReport.Case(name: "refused", file: "./Scenarios/refused.scn", seconds: 2, failure: nil),
            JUnitReport.Case(name: "handover", file: "Scenarios/handover.scn", seconds: 0, failure: nil, skipped: "skipped: link mode packet needs root"),
        ]
        let run = JUnitReport.Run(started: Date(timeIntervalSince1970: 1_795_856_412), seconds: 3.5, hostname: "ci-runner")
        let xml = JUnitReport.render(cases, run: run)
        #expect(xml.contains(#"<testsuite name="netsim" tests="3" failures="0" errors="0" skipped="1" time="3.500" timestamp="2026-11-28T09:00:12" hostname="ci-runner">"#), "\(xml)")
        #expect(xml.contains(#"<testcase classname="Scenarios.lockscreen" name="lockscreen" file="Scenarios/lockscreen.scn" time="3.000"/>"#), "\(xml)")
        #expect(xml.contains(#"classname="Scenarios.refused""#), "\(xml)")
        #expect(xml.contains(#"<skipped message="skipped: link mode packet needs root"/>"#), "\(xml)")
        #expect(XMLParser(data: Data(xml.utf8)).parse())
        #expect(JUnitReport.render(cases).contains(#"skipped="1" time="5.000">"#), "without a run, the cases' sum and no timestamp")
    }
}
