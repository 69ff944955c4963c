import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import Testing
@testable import NetsimRunner

/// Text from clients and servers (error messages, bodies) goes into the JUnit report: whatever
/// it holds, the report stays XML a CI can parse.
@Suite("JUnit escaping")
struct JUnitEscapeTests {
    @Test func everyCharacterXMLForbidsIsReplacedAndTheReportParses() {
        let hostile = "a\u{0}b\u{1b}[31mc\u{8}d\u{FFFE}e\u{FFFF}f<g>&\"'\r\n\té😀"
        let escaped = JUnitReport.escape(hostile)
        #expect(escaped == "a?b?[31mc?d?e?f&lt;g&gt;&amp;&quot;&apos;?\n\té😀")
        let document = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><failure message=\"\(escaped)\">\(escaped)</failure>"
        #expect(XMLParser(data: Data(document.utf8)).parse(), "\(escaped)")
    }
}
