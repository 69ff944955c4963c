import Foundation
import NetsimLoopback
import Testing
@testable import netsim

/// `netsim junit-merge`: what a shard that died or was cut off leaves is refused by name, and
/// nested suites count once.
@Suite("junit-merge")
struct JUnitMergeTests {
    static func merged(_ files: [(name: String, xml: String)]) throws -> JUnitMerge {
        var merge = JUnitMerge()
        for file in files { try merge.add(Data(file.xml.utf8), from: file.name) }
        return merge
    }

    static func message(_ xml: String) -> String? {
        do {
            _ = try merged([("r.xml", xml)])
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test func suitesAndTheirTotalsFromSeveralFiles() throws {
        let merge = try Self.merged([
            ("1.xml", #"<testsuites><testsuite name="a" tests="2" failures="1" errors="0" skipped="0" time="1.5"><testcase name="x"/><testcase name="y"><failure/></testcase></testsuite></testsuites>"#),
            ("2.xml", #"<testsuite name="b"><testcase name="z"><error/></testcase></testsuite>"#),
        ])
        #expect(merge.suites.count == 2)
        #expect(merge.totals.tests == 3 && merge.totals.failures == 1 && merge.totals.errors == 1)
        #expect(merge.totals.seconds == 1.5)
    }

    /// An empty file crashed the process (SIGSEGV inside Foundation's XMLDocument).
    @Test("an empty or blank file is refused", arguments: ["", "\n", "  \r\n\t"])
    func empty(_ xml: String) {
        #expect(Self.message(xml) == "r.xml is empty: a shard that stopped before writing its report leaves such a file; nothing was merged")
    }

    /// XMLDocument recovers from a truncated file: the merge counted what was left, exit 0.
    @Test("a file that is not well-formed is refused at its line and column", arguments: [
        #"<testsuites><testsuite name="broken"><testcase"#,
        "<testsuites>\n<testsuite name=\"a\"></testcase></testsuites>",
        "not xml",
    ])
    func notWellFormed(_ xml: String) {
        let message = Self.message(xml) ?? "merged"
        #expect(message.hasPrefix("r.xml:"), "\(message)")
        #expect(message.contains("not well-formed XML"), "\(message)")
    }

    /// A report written by the tests of a pull request is untrusted: an entity that names a
    /// file or a URL put the file's text, or the URL's answer, into the merged report (QA 65).
    /// A DOCTYPE that says more than a name is refused, and nothing is read or fetched.
    @Test func aDoctypeWithEntitiesOrAnExternalDTDIsRefusedAndNothingIsFetched() throws {
        let secret = NSTemporaryDirectory() + "netsim-junit-secret-\(UUID().uuidString).txt"
        try "do-not-copy-me".write(toFile: secret, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: secret) }
        let server = try LoopbackServer { socket in
            _ = try? socket.receive(timeout: .seconds(2))
            try? socket.send(Array("HTTP/1.0 200 OK\r\n\r\nfetched-from-the-network".utf8))
        }
        defer { server.stop() }
        let suite = #"<testsuite name="s" tests="1"><testcase name="a"><system-out>&x;</system-out></testcase></testsuite>"#
        let documents = [
            #"<!DOCTYPE testsuite [<!ENTITY x SYSTEM "file://\#(secret)">]>"# + suite,
            #"<!DOCTYPE testsuite [<!ENTITY x SYSTEM "http://\#(server.endpoint)/x">]>"# + suite,
            #"<!DOCTYPE testsuite [<!ENTITY % p SYSTEM "http://\#(server.endpoint)/p"> %p;]><testsuite name="s"/>"#,
            #"<!DOCTYPE testsuite SYSTEM "http://\#(server.endpoint)/junit.dtd"><testsuite name="s"/>"#,
            #"<!DOCTYPE testsuite [<!ENTITY x "inline">]>"# + suite,
        ]
        for document in documents {
            let message = Self.message(#"<?xml version="1.0"?>"# + "\n" + document) ?? "merged"
            #expect(message.hasPrefix("r.xml has a DOCTYPE with declarations or an external DTD"), "\(message)")
            #expect(!message.contains("do-not-copy-me") && !message.contains("fetched-from"), "\(message)")
        }
        #expect(server.acceptedCount == 0, "the merge fetched a URL the file named")
        // A DOCTYPE of a name alone declares nothing.
        #expect(try Self.merged([("d.xml", #"<!DOCTYPE testsuite><testsuite name="s" tests="0"/>"#)]).suites.count == 1)
    }

    /// Surefire nests suites: the inner one was kept twice (inside its parent and on its own)
    /// and its tests counted twice.
    @Test func nestedSuitesCountOnce() throws {
        let withTotals = try Self.merged([("n.xml", #"<testsuites><testsuite name="outer" tests="2" failures="1"><testsuite name="inner" tests="2" failures="1"><testcase name="a"/><testcase name="b"><failure>x</failure></testcase></testsuite></testsuite></testsuites>"#)])
        #expect(withTotals.suites.count == 1)
        #expect(withTotals.totals.tests == 2 && withTotals.totals.failures == 1)
        let counted = try Self.merged([("n.xml", #"<testsuite name="outer"><testcase name="c"/><testsuite name="inner"><testcase name="a"/><testcase name="b"><failure/></testcase></testsuite></testsuite>"#)])
        #expect(counted.totals.tests == 3 && counted.totals.failures == 1)
    }

    @Test func aFileWithoutSuitesIsRefused() {
        #expect(Self.message("<results/>") == "r.xml has no <testsuite>")
    }

    @Test func anEmptyFileExitsOneWithoutCrashing() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-junit-\(UUID())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        FileManager.default.createFile(atPath: "\(folder)/empty.xml", contents: Data())
        let result = try await NetsimProcess.run(["junit-merge", "--output", "\(folder)/out.xml", "\(folder)/empty.xml"])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr == "Error: \(folder)/empty.xml is empty: a shard that stopped before writing its report leaves such a file; nothing was merged\n")
        #expect(!FileManager.default.fileExists(atPath: "\(folder)/out.xml"))
    }

    /// QA 36: a file named twice (overlapping globs) counted its tests twice; so did an earlier
    /// merged output caught by `results*.xml`.
    @Test func aFileNamedTwiceIsMergedOnceAndTheOutputIsNoInput() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-junit-\(UUID())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let suite = #"<testsuite name="a" tests="2" failures="1" errors="0" time="1"><testcase name="x"/><testcase name="y"><failure message="m"/></testcase></testsuite>"#
        try suite.write(toFile: "\(folder)/r-1.xml", atomically: true, encoding: .utf8)
        let twice = try await NetsimProcess.run(["junit-merge", "--output", "\(folder)/r.xml", "\(folder)/r-1.xml", "\(folder)/../\((folder as NSString).lastPathComponent)/r-1.xml"])
        #expect(twice.status == 0, "\(twice.stderr)")
        #expect(twice.stdout.contains("1 suite, 2 tests, 1 failed"), "\(twice.stdout)")
        #expect(twice.stderr.contains("named again; merged once"), "\(twice.stderr)")
        let output = try await NetsimProcess.run(["junit-merge", "--output", "\(folder)/r.xml", "\(folder)/r-1.xml", "\(folder)/r.xml"])
        #expect(output.status == 64)
        #expect(output.stderr.contains("\(folder)/r.xml is also --output"), "\(output.stderr)")
        // A hard link is the same file by another name (QA 65: merged twice).
        #expect(link("\(folder)/r-1.xml", "\(folder)/r-hard.xml") == 0)
        let hard = try await NetsimProcess.run(["junit-merge", "--output", "\(folder)/r.xml", "\(folder)/r-1.xml", "\(folder)/r-hard.xml"])
        #expect(hard.stdout.contains("1 suite, 2 tests, 1 failed") && hard.stderr.contains("named again; merged once"), "\(hard.stdout)\(hard.stderr)")
        // A folder among the files, and a name XML cannot carry (QA 65: "NSCocoaErrorDomain
        // error 256"; a merged file no parser read).
        let folderInput = try await NetsimProcess.run(["junit-merge", "--output", "\(folder)/r.xml", folder])
        #expect(folderInput.status == 1 && folderInput.stderr.contains("\(folder) is a folder, not a JUnit file"), "\(folderInput.stderr)")
        let control = try await NetsimProcess.run(["junit-merge", "--output", "\(folder)/r.xml", "--name", "a\u{01}b", "\(folder)/r-1.xml"])
        #expect(control.status == 64 && control.stderr.contains("--name holds the control character U+0001"), "\(control.stderr)")
    }

    /// Writers that put their elements in a namespace, lay them out on lines, write empty
    /// elements short, or a time with thousands separators (Surefire in some locales): all
    /// merged as written (QA 65: "has no <testsuite>"; one line; `<skipped></skipped>`; 1,234.5
    /// counted as 0 without a word).
    @Test func namespacesLayoutEmptyElementsAndSeparatedTimesSurviveTheMerge() throws {
        let merge = try Self.merged([
            ("ns.xml", """
                <testsuites xmlns="urn:example:junit">
                  <testsuite name="a" tests="2" time="1,234.5">
                    <testcase name="x">
                      <skipped/>
                    </testcase>
                    <testcase name="y"/>
                  </testsuite>
                </testsuites>
                """),
            ("odd.xml", #"<testsuite name="b" time="soon"><testcase name="z"><failure/></testcase></testsuite>"#),
        ])
        #expect(merge.suites.count == 2)
        #expect(merge.totals.tests == 3 && merge.totals.failures == 1 && merge.totals.skipped == 1, "\(merge.totals)")
        #expect(merge.totals.seconds == 1234.5)
        #expect(merge.suites[0].contains("\n    <testcase name=\"x\">\n      <skipped/>\n"), "\(merge.suites[0])")
        #expect(merge.warnings == [#"odd.xml: suite 'b' has time="soon", not a number of seconds; counted as 0"#])
    }
}
