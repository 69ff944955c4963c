import Foundation
import NetsimCore
import Yams

/// A `key: value` pair of a YAML mapping, with positions.
struct Entry {
    var key: String
    var keyNode: Node
    var value: Node
    var keyLocation: SourceLocation
    /// Where the value is written (`~` too); the key's position when nothing is (`key:`).
    var valueLocation: SourceLocation
}

/// A YAML mapping whose keys were read: duplicates and non-text keys already reported.
struct Mapping {
    /// Where the mapping starts (its first key for a block mapping, `{` for a flow one).
    var location: SourceLocation
    var entries: [Entry]
    /// How diagnostics name it: "the scenario", "'upstream'", "timeline step 2", …
    var place: String

    subscript(key: String) -> Entry? { entries.first { $0.key == key } }
    func has(_ key: String) -> Bool { entries.contains { $0.key == key } }
    var keys: [String] { entries.map(\.key) }
}

/// Walks the composed YAML, building model values and collecting every problem on the way.
/// Each reader returns nil after reporting a problem, so the walk always continues.
final class Validator {
    let file: String
    let renamedKeys: [String: String]
    /// Looks into a `replay:` capture beyond its first bytes (``ScenarioParser/CaptureCheck``).
    let captureCheck: ScenarioParser.CaptureCheck?
    private(set) var diagnostics: [Diagnostic] = []
    /// Per mapping (by its position), the keys that an unknown key there was taken to be a
    /// misspelling of: "missing required key" is not reported for those, the misspelling says it all.
    private var suggestedKeys: [SourceLocation: Set<String>] = [:]

    /// The scenario link's `mode:` (read with `link:`, before the timeline and `expect:` that
    /// depend on it) and its packet-only settings.
    var linkMode = LinkMode.relay
    var packetLink = PacketLinkSettings()
    /// Why no HTTP/2 crosses the relay for the `h2:` faults to act on, with a hint (read from
    /// `upstream` and the link's `tls` before the timeline, whose `h2:` faults it refuses); nil
    /// when it can, or when those could not be read.
    var noHTTP2: (why: String, hint: String)?
    /// The DNS delay of the scenario link's profile (`high-latency-dns`), where it is named.
    var profileDNSDelay: (delay: Duration, location: SourceLocation)?

    init(file: String, renamedKeys: [String: String], captureCheck: ScenarioParser.CaptureCheck? = nil) {
        self.file = file
        self.renamedKeys = renamedKeys
        self.captureCheck = captureCheck
    }

    var errorCount: Int { diagnostics.count }

    func location(_ node: Node) -> SourceLocation {
        let (line, column) = node.position
        return SourceLocation(file: file, line: line, column: column)
    }

    func error(_ location: SourceLocation, _ message: String, hint: String? = nil) {
        diagnostics.append(Diagnostic(location: location, message: message, hint: hint))
    }

    // MARK: Structure

    /// The node as a mapping; reports a type error (naming `what`) otherwise.
    func mapping(_ node: Node, at location: SourceLocation? = nil, what: String, place: String) -> Mapping? {
        guard case .mapping(let pairs) = node else {
            error(location ?? self.location(node), "\(what) must be a mapping, found \(node.foundDescription)",
                  hint: node.isNull ? nil : mappingHint(for: node))
            return nil
        }
        var entries: [Entry] = []
        var seen: [String: SourceLocation] = [:]
        for (keyNode, value) in pairs {
            let keyLocation = self.location(keyNode)
            guard case .scalar(let scalar) = keyNode, !keyNode.isNull else {
                error(keyLocation, "keys in \(place) must be names, found \(keyNode.foundDescription)")
                continue
            }
            let key = renamedKeys[scalar.string] ?? scalar.string
            if let first = seen[key] {
                error(keyLocation, "duplicate key '\(key)' in \(place); it was already given at line \(first.line)",
                      hint: "give each key once; the first '\(key)' is the one used")
                continue
            }
            seen[key] = keyLocation
            // `key:` has no value to point at; `key: ~` and `key: null` do (QA 61: the error was at the key).
            let unwritten = if case .scalar(let scalar) = value, scalar.string.isEmpty, value.isNull { true } else { false }
            let valueLocation = unwritten ? keyLocation : self.location(value)
            entries.append(Entry(key: key, keyNode: keyNode, value: value, keyLocation: keyLocation, valueLocation: valueLocation))
        }
        return Mapping(location: location ?? self.location(node), entries: entries, place: place)
    }

    private func mappingHint(for node: Node) -> String? {
        switch node {
        case .sequence: return "remove the '- ' in front of the keys"
        case .scalar(let scalar) where !scalar.string.contains(":"): return "write it as 'key: value' pairs"
        default: return nil
        }
    }

    /// The entry's value as a mapping.
    func mapping(_ entry: Entry, place: String? = nil) -> Mapping? {
        mapping(entry.value, at: entry.value.isNull ? entry.keyLocation : nil, what: "'\(entry.key)'", place: place ?? "'\(entry.key)'")
    }

    /// The entry's value as a list.
    func list(_ entry: Entry, of what: String) -> [Node]? {
        guard case .sequence(let items) = entry.value else {
            error(entry.valueLocation, "'\(entry.key)' must be a list of \(what), found \(entry.value.foundDescription)",
                  hint: "write each item on its own line starting with '- '")
            return nil
        }
        return Array(items)
    }

    /// Reports keys not in `allowed` ("did you mean …?" chosen from `suggestions`, default `allowed`).
    /// Returns the unknown keys.
    @discardableResult
    func rejectUnknownKeys(_ mapping: Mapping, allowed: [String], suggestions: [String]? = nil, skipping: Set<String> = []) -> [Entry] {
        var unknown: [Entry] = []
        for entry in mapping.entries where !allowed.contains(entry.key) && !skipping.contains(entry.key) {
            unknown.append(entry)
            let candidates = suggestions ?? allowed
            if let near = closestMatch(to: entry.key, among: candidates) {
                suggestedKeys[mapping.location, default: []].insert(near)
            }
            error(entry.keyLocation, "unknown key '\(entry.key)' in \(mapping.place)",
                  hint: suggestionHint(entry.key, among: candidates, listing: "keys here"))
        }
        return unknown
    }

    /// "did you mean 'x'?" when one candidate is close, otherwise the list of candidates.
    func suggestionHint(_ word: String, among candidates: [String], listing: String) -> String? {
        if let near = closestMatch(to: word, among: candidates) { return "did you mean '\(near)'?" }
        guard !candidates.isEmpty else { return nil }
        var seen = Set<String>()
        return "\(listing): \(candidates.filter { seen.insert($0).inserted }.joined(separator: ", "))"
    }

    /// Reports a missing required key at the start of the mapping.
    func require(_ key: String, in mapping: Mapping, hint: String? = nil) -> Entry? {
        if let entry = mapping[key] { return entry }
        if suggestedKeys[mapping.location]?.contains(key) ?? false { return nil }
        error(mapping.location, "missing required key '\(key)' in \(mapping.place)", hint: hint)
        return nil
    }

    // MARK: Scalars

    /// The value as written, when it is a scalar (not a mapping, list or nothing).
    func scalar(_ entry: Entry, expected: String) -> String? {
        guard case .scalar(let scalar) = entry.value, !entry.value.isNull else {
            error(entry.valueLocation, "'\(entry.key)' must be \(expected), found \(entry.value.foundDescription)")
            return nil
        }
        return scalar.string
    }

    func text(_ entry: Entry, expected: String = "text", allowEmpty: Bool = true) -> String? {
        guard let value = scalar(entry, expected: expected) else { return nil }
        if !allowEmpty, value.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            error(entry.valueLocation, "'\(entry.key)' must not be empty")
            return nil
        }
        return value
    }

    func integer(_ entry: Entry, range: ClosedRange<Int>? = nil, expected: String = "an integer") -> Int? {
        guard let raw = scalar(entry, expected: expected) else { return nil }
        guard let value = Int(raw.replacingOccurrences(of: "_", with: "")) else {
            error(entry.valueLocation, "'\(entry.key)' must be \(expected), found '\(raw)'")
            return nil
        }
        if let range, !range.contains(value) {
            error(entry.valueLocation, "'\(entry.key)' must be \(expected), found \(value)")
            return nil
        }
        return value
    }

    func number(_ entry: Entry, expected: String, isValid: (Double) -> Bool) -> Double? {
        guard let raw = scalar(entry, expected: expected) else { return nil }
        guard let value = Double(raw), value.isFinite, isValid(value) else {
            error(entry.valueLocation, "'\(entry.key)' must be \(expected), found '\(raw)'")
            return nil
        }
        return value
    }

    /// YAML 1.1's words for true, in any case (YAML 1.2 keeps only `true`; files in the wild use both).
    static let trueWords: [String] = ["true", "yes", "on"]

    func boolean(_ entry: Entry) -> Bool? {
        guard let raw = scalar(entry, expected: "true or false") else { return nil }
        switch raw.lowercased() {
        case let word where Self.trueWords.contains(word): return true
        case "false", "no", "off": return false
        default:
            error(entry.valueLocation, "'\(entry.key)' must be true or false, found '\(raw)'")
            return nil
        }
    }

    /// A value in one of netsim's unit syntaxes; a bad one reports the accepted forms as the hint.
    func unit<T>(_ entry: Entry, expected: String, _ parse: (String) throws -> T) -> T? {
        guard let raw = scalar(entry, expected: expected) else { return nil }
        do {
            return try parse(raw)
        } catch let failure as UnitParseError {
            error(entry.valueLocation, "\(entry.key): '\(failure.input)' is not \(failure.expected)",
                  hint: "write it as \(failure.allowedForms)")
        } catch {
            self.error(entry.valueLocation, "\(entry.key): \(error)")
        }
        return nil
    }

    func duration(_ entry: Entry) -> Duration? { unit(entry, expected: "a duration") { try Duration(parsing: $0) } }
    func rate(_ entry: Entry) -> DataRate? { unit(entry, expected: "a data rate") { try DataRate(parsing: $0) } }
    func byteCount(_ entry: Entry) -> ByteCount? { unit(entry, expected: "a byte count") { try ByteCount(parsing: $0) } }
    func probability(_ entry: Entry) -> Probability? { unit(entry, expected: "a percentage") { try Probability(parsing: $0) } }
    func endpoint(_ entry: Entry) -> Endpoint? { unit(entry, expected: "an address") { try Endpoint(parsing: $0) } }

    /// One of a fixed set of words; otherwise "unknown <what> 'x'" with a suggestion, or
    /// `explanation` (default: the list of words).
    func choice<T>(_ entry: Entry, what: String, options: [(String, T)], normalize: (String) -> String = { $0 }, explanation: String? = nil) -> T? {
        // "one of …", not `what` ("'judges' must be judges, found a list", QA 61).
        guard let raw = scalar(entry, expected: "one of \(options.map(\.0).joined(separator: ", "))") else { return nil }
        let wanted = normalize(raw)
        if let match = options.first(where: { $0.0 == wanted }) { return match.1 }
        let names = options.map(\.0)
        var hint = closestMatch(to: raw, among: names).map { "did you mean '\($0)'?" }
            ?? explanation ?? suggestionHint(raw, among: names, listing: "use one of")
        // A short list is named whole, even beside a guess: `target: old` was told only "did
        // you mean 'all'?", of all, new and existing (QA 43).
        if names.count <= 6, hint?.hasPrefix("did you mean") == true {
            hint! += " (one of \(names.joined(separator: ", ")))"
        }
        error(entry.valueLocation, "unknown \(what) '\(raw)'", hint: hint)
        return nil
    }

    /// A mapping of text to text, in the order written (headers, settings).
    func stringPairs(_ entry: Entry, what: String) -> [(key: String, value: String, location: SourceLocation)]? {
        mapping(entry).flatMap { stringPairs($0, what: what) }
    }

    /// A mapping already read, as text to text (its duplicate keys were reported as it was read).
    func stringPairs(_ map: Mapping, what: String) -> [(key: String, value: String, location: SourceLocation)]? {
        var pairs: [(key: String, value: String, location: SourceLocation)] = []
        var ok = true
        for item in map.entries {
            guard case .scalar(let scalar) = item.value else {
                error(item.valueLocation, "\(what) '\(item.key)' must be text, found \(item.value.foundDescription)")
                ok = false
                continue
            }
            // Text as written; `Key:` with nothing after it is the empty text.
            pairs.append((item.key, scalar.string, item.keyLocation))
        }
        return ok ? pairs : nil
    }

    // MARK: Names

    /// Letters, digits and dashes (scenario, request and fault names).
    func name(_ entry: Entry, what: String) -> String? {
        guard let value = text(entry, expected: "a name") else { return nil }
        if value.isEmpty {
            error(entry.valueLocation, "\(what) must not be empty", hint: "use letters, digits and dashes, e.g. after-unlock")
            return nil
        }
        if let bad = value.unicodeScalars.first(where: { !Self.isNameCharacter($0) }) {
            let shown = bad == " " ? "a space" : "'\(bad)'"
            error(entry.valueLocation, "\(what) '\(value)' contains \(shown); names use letters, digits and dashes",
                  hint: "for example '\(Self.suggestedName(value))'")
            return nil
        }
        // Names become file names (`--pcap DIR/<name>-<client>.pcap`) and report headings: a
        // 300-character name passed the check and its capture could not be written (QA 61).
        if value.count > Self.longestName {
            error(entry.valueLocation, "\(what) is \(value.count) characters long; at most \(Self.longestName)",
                  hint: "a short name that says what happens, e.g. 'lock-then-retry'; the description holds the rest")
            return nil
        }
        return value
    }

    /// The longest scenario, request or fault name.
    static let longestName = 100

    static func isNameCharacter(_ c: Unicode.Scalar) -> Bool {
        (c.properties.isAlphabetic && c.isASCII) || ("0"..."9").contains(c) || c == "-"
    }

    static func suggestedName(_ value: String) -> String {
        var out = ""
        for c in value.unicodeScalars {
            if isNameCharacter(c) {
                out.unicodeScalars.append(c)
            } else if !out.hasSuffix("-") {
                out += "-"
            }
        }
        while out.hasSuffix("-") { out.removeLast() }
        while out.hasPrefix("-") { out.removeFirst() }
        return out.isEmpty ? "my-name" : out
    }

    /// An HTTP method: an upper-case token such as GET.
    func method(_ entry: Entry) -> String? {
        guard let value = text(entry, expected: "an HTTP method") else { return nil }
        let isToken = !value.isEmpty && value.unicodeScalars.allSatisfy { ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "-" || $0 == "_" }
        guard isToken, let first = value.unicodeScalars.first, ("A"..."Z").contains(first) else {
            let upper = value.uppercased()
            let upperIsToken = !upper.isEmpty && upper.unicodeScalars.allSatisfy { ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "-" || $0 == "_" }
            error(entry.valueLocation, "'\(value)' is not an HTTP method; methods are upper-case words such as GET or POST",
                  hint: upperIsToken && upper != value ? "did you mean '\(upper)'?" : nil)
            return nil
        }
        return value
    }

    /// A request path: starts with "/".
    func path(_ entry: Entry) -> String? {
        guard let value = text(entry, expected: "a path") else { return nil }
        guard value.hasPrefix("/") else {
            // A URL is not a path (QA 61: `http://x/feed` was asked "did you mean '/http://x/feed'?").
            if let scheme = value.range(of: "://") {
                let afterHost = value[scheme.upperBound...].drop { $0 != "/" }
                error(entry.valueLocation, "path '\(value)' is a URL; give the path alone",
                      hint: "did you mean '\(afterHost.isEmpty ? "/" : afterHost)'? the client is sent to netsim's relay, which reaches the upstream")
            } else {
                error(entry.valueLocation, "path '\(value)' must start with '/'", hint: "did you mean '/\(value)'?")
            }
            return nil
        }
        // A request line is ASCII: clients percent-encode the rest (curl's client crashed on
        // `/fééd`, others sent raw UTF-8, which servers may refuse). Before the space check, so
        // that a line break is not told to be written as %20.
        if !value.allSatisfy({ $0.isASCII && $0 != "\r\n" && !($0.asciiValue.map { $0 < 0x20 || $0 == 0x7F } ?? true) }) {
            error(entry.valueLocation, "path '\(value)' has characters a request line cannot carry (not ASCII, or control characters)",
                  hint: "write it percent-encoded, as a client sends it: '\(Self.percentEncoded(value))'")
            return nil
        }
        if value.contains(" ") {
            error(entry.valueLocation, "path '\(value)' contains white space", hint: "percent-encode spaces as %20")
            return nil
        }
        // Clients never send a fragment (QA 61: `/feed#x` went out as `/feed`, so a check on
        // `/feed#x` could never match).
        if let hash = value.firstIndex(of: "#") {
            error(entry.valueLocation, "path '\(value)' has a fragment ('\(value[hash...])'), which clients never send",
                  hint: "did you mean '\(value[..<hash])'? (write '#' as %23 if it is part of the path)")
            return nil
        }
        return value
    }

    /// A path matched without its query string (a route's, the server's requests'): one with a
    /// `?` could never match (QA 61: `server: { path: "/feed?x=1" }` passed the check and
    /// counted 0). `what` names the path in the message: `route path`, `server path`.
    func pathWithoutQuery(_ entry: Entry, what: String, matched: String) -> String? {
        guard let value = path(entry) else { return nil }
        guard !value.contains("?") else {
            error(entry.valueLocation, "\(what) '\(value)' contains a query; \(matched) the path without the query string",
                  hint: "did you mean '\(value.prefix { $0 != "?" })'?")
            return nil
        }
        return value
    }

    /// `value` with every byte of its UTF-8 outside printable ASCII as `%XX`.
    static func percentEncoded(_ value: String) -> String {
        value.utf8.map { $0 > 0x20 && $0 < 0x7F ? String(UnicodeScalar($0)) : String(format: "%%%02X", $0) }.joined()
    }
}
