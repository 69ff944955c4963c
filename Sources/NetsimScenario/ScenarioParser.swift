import Foundation
import NetsimCore
import NetsimRoutes
import NetsimLink
import NetsimFaults
import Yams

/// Reads scenario files (docs/scenario-format.md): YAML in, a validated ``Scenario`` out, or
/// every problem in the file at once, each with its position.
public enum ScenarioParser {
    /// Why the capture file at a resolved path cannot be replayed, or nil. The parser itself
    /// tells a capture from its first bytes; the replay, which reads the whole file, lives above
    /// it (NetsimRunner's `ReplayUpstream.problem(at:)`), and netsim's commands pass that, so a
    /// truncated or snaplen-cut capture fails `netsim check` at its place, as it fails the run.
    public typealias CaptureCheck = @Sendable (_ path: String) -> String?

    /// Reads, parses and validates a file. Paths are reported as given (e.g. "Scenarios/lockscreen.scn").
    /// A file that cannot be read is one diagnostic.
    public static func parse(file path: String, captureCheck: CaptureCheck? = nil) throws(ScenarioErrors) -> Scenario {
        let source = try read(file: path)
        return try parse(source: source, file: path, captureCheck: captureCheck)
    }

    /// Parses and validates scenario text; `file` names it in diagnostics and in the model's locations.
    public static func parse(source: String, file: String, captureCheck: CaptureCheck? = nil) throws(ScenarioErrors) -> Scenario {
        let lines = ScenarioErrors.lines(of: source)
        let document: YAMLDocument
        do {
            document = try YAMLDocument.compose(source)
        } catch {
            switch error {
            case .syntax(let message, let hint, let line, let column):
                let diagnostic = Diagnostic(location: SourceLocation(file: file, line: line, column: column), message: message, hint: hint)
                throw ScenarioErrors(diagnostics: [diagnostic], sourceLines: lines)
            }
        }
        let validator = Validator(file: file, renamedKeys: document.renamedKeys, captureCheck: captureCheck)
        let scenario = validator.scenario(document.root, file: file, sourceLines: lines)
        if let scenario, validator.diagnostics.isEmpty { return scenario }
        var diagnostics = validator.diagnostics
        if diagnostics.isEmpty {
            // Cannot happen: every reader that gives up reports why. Never let a file pass silently.
            diagnostics = [Diagnostic(location: SourceLocation(file: file, line: 1, column: 1), message: "the scenario could not be read")]
        }
        throw ScenarioErrors(diagnostics: sorted(diagnostics), sourceLines: lines)
    }

    /// By position; diagnostics at the same position keep the order they were found in.
    static func sorted(_ diagnostics: [Diagnostic]) -> [Diagnostic] {
        diagnostics.enumerated().sorted { a, b in
            let (x, y) = (a.element.location, b.element.location)
            if x.line != y.line { return x.line < y.line }
            if x.column != y.column { return x.column < y.column }
            return a.offset < b.offset
        }.map(\.element)
    }

    private static func read(file path: String) throws(ScenarioErrors) -> String {
        let location = SourceLocation(file: path, line: 0, column: 0)
        func fail(_ message: String, hint: String? = nil) -> ScenarioErrors {
            ScenarioErrors(diagnostics: [Diagnostic(location: location, message: message, hint: hint)], sourceLines: [])
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw fail("no such file")
        }
        if isDirectory.boolValue { throw fail("is a directory, not a scenario file") }
        // Through a handle: FileManager's contents(atPath:) gave no reason (QA 61: a file the
        // user may not read, and /dev/null, were both "cannot read the file").
        let data: Data
        do {
            guard let handle = FileHandle(forReadingAtPath: path) else {
                throw CocoaError(.fileReadNoPermission)
            }
            defer { try? handle.close() }
            data = try handle.readToEnd() ?? Data()
        } catch {
            let reason = access(path, R_OK) != 0 ? String(cString: strerror(errno)) : "\(error.localizedDescription)"
            throw fail("cannot read the file: \(reason)")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            // Where: the first byte that is not UTF-8 (QA 61: no line was named).
            let (line, column) = Self.firstInvalidUTF8(in: data)
            throw ScenarioErrors(diagnostics: [Diagnostic(location: SourceLocation(file: path, line: line, column: column),
                                                          message: "the file is not UTF-8 text: this byte is not UTF-8", hint: "save it as UTF-8")],
                                 sourceLines: ScenarioErrors.lines(of: String(decoding: data, as: UTF8.self)))
        }
        return text
    }

    /// The 1-based line and scalar column of the first byte of `data` that is not UTF-8.
    static func firstInvalidUTF8(in data: Data) -> (line: Int, column: Int) {
        var line = 1
        var column = 1
        var iterator = data.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar):
                if scalar == "\n" { line += 1; column = 1 } else { column += 1 }
            case .emptyInput, .error:
                return (line, column)
            }
        }
    }
}

// MARK: - The top level

extension Validator {
    static let topLevelKeys = ["name", "description", "seed", "upstream", "link", "dns", "client", "timeline", "expect"]

    func scenario(_ root: Node?, file: String, sourceLines: [String]) -> Scenario? {
        let start = SourceLocation(file: file, line: 1, column: 1)
        guard let root, !root.isNull else {
            error(start, "the scenario is empty",
                  hint: "a scenario is a mapping with the keys name, description, upstream, client, timeline and expect")
            return nil
        }
        guard case .mapping = root else {
            error(location(root), "the top level of a scenario must be a mapping of keys, found \(root.foundDescription)",
                  hint: "start with 'name:', 'description:', 'upstream:', 'client:', 'timeline:' and 'expect:'")
            return nil
        }
        guard let top = mapping(root, what: "the scenario", place: "the scenario") else { return nil }
        rejectUnknownKeys(top, allowed: Self.topLevelKeys)

        var name: String?
        if let entry = require("name", in: top, hint: "add 'name: my-scenario' (letters, digits and dashes)") {
            name = self.name(entry, what: "the scenario name")
        }
        var description: String?
        if let entry = require("description", in: top, hint: "add 'description:' saying which real incident the scenario reproduces") {
            // Printed at the head of every run: a control character (a "\e[31m" written in
            // double quotes) reached the terminal as an escape sequence (QA 58).
            let written = text(entry, allowEmpty: false)
            if let bad = written?.unicodeScalars.first(where: { $0.properties.generalCategory == .control && $0 != "\n" && $0 != "\t" }) {
                error(entry.valueLocation, "'description' holds the control character U+\(String(format: "%04X", bad.value)), which a terminal would take as a command",
                      hint: "write the description as plain text (no escape sequences such as \\e[31m)")
            }
            description = written.map { text in
                var text = Substring(text)
                while let last = text.last, last.isWhitespace { text = text.dropLast() }
                return String(text)
            }
        }
        var seed: UInt64 = 1
        if let entry = top["seed"] {
            if let raw = scalar(entry, expected: "a whole number from 0 to \(UInt64.max)") {
                if let value = UInt64(raw.replacingOccurrences(of: "_", with: "")) {
                    seed = value
                } else {
                    error(entry.valueLocation, "'seed' must be a whole number from 0 to \(UInt64.max), found '\(raw)'",
                          hint: "the seed makes random choices repeatable; any whole number in that range will do")
                }
            }
        }
        let upstream = require("upstream", in: top, hint: "add 'upstream:' with 'routes', 'address' or 'replay'").flatMap(self.upstream)
        var link = LinkConfiguration.unimpaired
        var linkOK = true
        var interceptTLS = false
        if let entry = top["link"] {
            if let value = self.link(entry) { link = value } else { linkOK = false }
            if let value = linkTLS(entry, upstream: upstream) { interceptTLS = value } else { linkOK = false }
        }
        if let upstream, linkOK { noHTTP2 = Self.whyNoHTTP2(upstream: upstream, interceptTLS: interceptTLS) }
        // A `dns:` block needs a resolver the client uses: read, then refused unless the link is a packet path.
        var dns = top["dns"].map { self.dns($0, packetMode: linkMode == .packet) }
        let client = require("client", in: top, hint: "add 'client:' with at least 'driver'").flatMap(self.client)
        // nil when there is no readable timeline: expectations then cannot be checked against it.
        var requestNames: [String: SourceLocation]?
        let timeline = require("timeline", in: top, hint: "add 'timeline:', a list of steps").flatMap {
            self.timeline($0, requestNames: &requestNames)
        }
        var readable: [Expectation] = []
        let expectations = require("expect", in: top, hint: "add 'expect:', a list of expectations").flatMap {
            self.expectations($0, requestNames: requestNames, readable: &readable)
        }

        // Whatever else failed, so every problem is reported at once.
        checkPacketMode(upstream: upstream, upstreamLocation: top["upstream"]?.keyLocation, dns: dns ?? nil, expectations: readable)
        checkServerSubjects(upstream: upstream, expectations: readable)
        if let timeline { checkRequestCounts(timeline: timeline, expectations: readable) }
        // Refused by `netsim run` with no place named (QA 61: `netsim check` said ok).
        if let upstream, let client, client.driver != "exec",
           case .builtin(_, _, let wire) = upstream, !wire.tls, wire.protocols == [.http2] {
            error(client.location, "the \(client.driver) driver cannot speak h2 without TLS (h2c, prior knowledge), the only protocol the upstream's 'http' offers",
                  hint: "add 'tls: true' to the upstream (h2 by ALPN), list http/1.1 in its 'http', or use an exec client that speaks h2c")
        }
        guard let name, let description, let upstream, linkOK, let client, let timeline, let expectations, errorCount == 0 else { return nil }
        if case .some(nil) = dns { return nil }
        // A profile's DNS delay (`high-latency-dns`) unless `dns: { delay: … }` says otherwise.
        if linkMode == .packet, let profileDelay = profileDNSDelay {
            var block = (dns ?? nil) ?? ScenarioDNS(location: profileDelay.location)
            if block.faults.delay == .zero { block.faults.delay = profileDelay.delay }
            dns = block
        }
        var scenario = Scenario(
            file: file, sourceLines: sourceLines, name: name, description: description, seed: seed,
            upstream: upstream, link: link, interceptTLS: interceptTLS, client: client, timeline: timeline, expectations: expectations)
        scenario.dns = dns ?? nil
        scenario.linkMode = linkMode
        scenario.packetLink = packetLink
        return scenario
    }
}
