import Foundation
import NetsimCore
import NetsimFaults
import Testing

@Suite("The fault catalog")
struct CatalogTests {
    @Test("every fault parses its own example, and its description parses back to it")
    func examplesRoundTrip() throws {
        for fault in FaultCatalog.all {
            let kind = try FaultKind(parsing: fault.example)
            #expect(kind.name == fault.name)
            #expect(try FaultKind(parsing: kind.description) == kind, "\(kind)")
        }
    }

    @Test("names and toxic types are unique; the allowed forms list every fault")
    func unique() {
        #expect(Set(FaultCatalog.names).count == FaultCatalog.all.count)
        let toxics = FaultCatalog.toxicTypes.map(\.type)
        #expect(Set(toxics).count == toxics.count)
        for fault in FaultCatalog.all { #expect(FaultCatalog.allowedForms.contains(fault.name + fault.syntax)) }
    }

    /// The relay's help offered `offline` among its own faults, and the relay then refused it.
    @Test("the forms a packet link alone takes are said as such, after the others")
    func packetOnlyFormsComeLastAndSaySo() throws {
        let parts = FaultCatalog.allowedForms.components(separatedBy: "; a packet link (netsim shell, link mode: packet) also takes ")
        try #require(parts.count == 2, "\(FaultCatalog.allowedForms)")
        for fault in FaultCatalog.all {
            let form = fault.name + fault.syntax
            #expect(parts[fault.paths.contains(.relay) ? 0 : 1].contains(form), "\(form)")
        }
        #expect(!parts[0].contains("offline") && !parts[0].contains("udp-block"))
    }

    /// A known name with a bad value gets that fault's own forms (the whole catalog, about a
    /// thousand characters, was the hint for `stale=rts`); an unknown name gets every form.
    @Test("a bad fault names what was expected and the forms that fit", arguments: [
        ("stale=maybe", "a stale close"), ("limit", "needs a value"), ("fin=now", "takes no value"),
        ("cut=lots", "a byte count"), ("garbage=0", "a positive byte count"), ("stall=sideways", "a stalled direction"),
        ("nosuchfault", "a fault"),
        // Past what the arithmetic holds: these trapped (a clock plus 2562047h; NIO's 32-bit setting).
        ("idle-close=2562047h", "at most 8760h"), ("slow-connect=9000h", "at most 8760h"),
        ("max-streams=4294967296", "0 ≤ N ≤ 4294967295"),
        // The part after the comma is named when it is the wrong one (it said "a byte count").
        ("cut=1KB,foo", "a byte count, then optionally ,fin or ,rst ('foo' after the comma is neither)"),
        ("slow-close=1s,sideways", "a duration, then optionally ,up or ,down ('sideways' after the comma is neither)"),
        // 0 closed every connection a millisecond after it opened.
        ("idle-close=0", "a duration longer than 0"),
        // QA 61: `rst=` trapped (index out of range) in check, run, test and relay alike; a
        // trailing comma passed as if it were not there.
        ("rst=", "the direction whose bytes trigger the reset"), ("rst=down,", "a delay after the comma (rst=down,500ms)"),
    ])
    func badFaults(text: String, expected: String) {
        do {
            _ = try FaultKind(parsing: text)
            Issue.record("\(text) parsed")
        } catch {
            #expect(error.expected.contains(expected), "\(error.expected)")
            let name = String(text.prefix { $0 != "=" })
            if let type = FaultCatalog.named(name) {
                #expect(error.allowedForms == FaultCatalog.forms(of: type))
                #expect(error.allowedForms.hasPrefix(name) && error.allowedForms.count < 80, "\(error.allowedForms)")
            } else {
                #expect(error.allowedForms == FaultCatalog.allowedForms)
            }
        }
    }

    /// Every fault with an empty value, stray commas, or a comma after its example's value: an
    /// error or a fault that reads back the same, never a trap (QA 61: `rst=` killed netsim).
    @Test("empty and comma-ridden values are refused or read back, never a crash")
    func emptyAndCommaValues() {
        for type in FaultCatalog.all {
            let example = type.example.split(separator: "=", maxSplits: 1).dropFirst().first.map(String.init) ?? "x"
            for value in ["", ",", ",,", "\(example),", ",\(example)", "\(example),,"] {
                guard let fault = try? FaultKind(parsing: "\(type.name)=\(value)") else { continue }
                #expect((try? FaultKind(parsing: fault.description)) == fault, "\(type.name)=\(value) read as \(fault)")
                #expect(!value.hasSuffix(","), "\(type.name)=\(value) passed, its comma ignored, as \(fault)")
            }
        }
    }

    @Test("one file per fault, named after its type, in Catalog/")
    func filePerFault() {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Sources/NetsimFaults/Catalog").standardized
        let files = Set((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [])
        let types = Set(FaultCatalog.all.map { "\($0).swift" })
        #expect(files == types)
    }

    @Test("docs/faults.md holds the catalog's table as netsim faults --markdown prints it")
    func docsTable() throws {
        let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/faults.md").standardized
        let text = try String(contentsOf: page, encoding: .utf8)
        #expect(text.contains(FaultCatalog.markdownTable), "regenerate with: swift run netsim faults --markdown")
    }
}
