import Foundation

/// A link's capacity over time in Mahimahi's trace format: one line per opportunity to deliver
/// one 1500-byte packet, as whole milliseconds from the start of the trace; a timestamp repeated
/// k times is k packets in that millisecond. The trace repeats (wraps) after its last
/// timestamp, as mm-link's does. Recorded traces (Winstein et al., Sprout, NSDI 2013) carry a
/// cellular link's real variation, which no constant rate has.
public struct DeliveryTrace: Equatable, Sendable, CustomStringConvertible {
    /// Bytes one opportunity may carry (Mahimahi's PACKET_SIZE).
    public static let opportunityBytes = 1500

    /// The latest timestamp a trace may have: 10^10 ms, about 115 days (recorded traces last
    /// minutes). In nanoseconds, with its repetitions, it stays far inside 64 bits; a later one
    /// overflowed them and crashed the relay as it started.
    public static let latestMilliseconds: Int64 = 10_000_000_000

    /// Opportunity times in milliseconds, non-decreasing, the last > 0.
    public let milliseconds: [Int64]
    /// Where it came from, for descriptions (a file's name).
    public let name: String

    /// A trace whose problem is reported with its position (file:line) and a hint.
    public struct Invalid: Error, Equatable, CustomStringConvertible {
        public var description: String
        public init(description: String) { self.description = description }
    }

    public init(milliseconds: [Int64], name: String) throws(Invalid) {
        guard let last = milliseconds.last else {
            throw Invalid(description: "\(name): the trace is empty; expected one millisecond timestamp per line (Mahimahi's format)")
        }
        guard last > 0 else {
            throw Invalid(description: "\(name): the last timestamp is 0; the trace repeats after its last timestamp, so it must be later than 0 ms")
        }
        guard last <= Self.latestMilliseconds else {
            throw Invalid(description: "\(name): the last timestamp, \(last) ms, is later than netsim takes (\(Self.latestMilliseconds) ms, about 115 days); timestamps are milliseconds from the trace's start")
        }
        self.milliseconds = milliseconds
        self.name = name
    }

    /// Reads Mahimahi's format: blank lines are skipped; anything else must be a whole number of
    /// milliseconds, not below the line before it. Lines may end in CRLF.
    public init(parsing text: String, name: String) throws(Invalid) {
        var values: [Int64] = []
        var lineNumber = 0
        for line in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {  // "\r\n" is one Character
            lineNumber += 1
            let field = line.trimmingCharacters(in: .whitespacesAndNewlines)
            if field.isEmpty { continue }
            // Digits past 64 bits are a timestamp too late, not "not a timestamp".
            if Int64(field) == nil, !field.isEmpty, field.allSatisfy(\.isASCII), field.allSatisfy(\.isNumber) {
                throw Invalid(description: "\(name):\(lineNumber): \(Self.shown(field)) ms is later than netsim takes (\(Self.latestMilliseconds) ms, about 115 days); timestamps are milliseconds from the trace's start")
            }
            guard let value = Int64(field), value >= 0 else {
                throw Invalid(description: "\(name):\(lineNumber): '\(Self.shown(field))' is not a timestamp; expected a whole number of milliseconds (Mahimahi's trace format: one per line)")
            }
            if let previous = values.last, value < previous {
                throw Invalid(description: "\(name):\(lineNumber): \(value) ms comes before the line above (\(previous) ms); timestamps must not decrease")
            }
            values.append(value)
        }
        try self.init(milliseconds: values, name: name)
    }

    /// A line as an error quotes it: control characters escaped (`\u{07}`), at most 40 characters.
    static func shown(_ field: String) -> String {
        let escaped = field.unicodeScalars.map { $0.properties.generalCategory == .control ? $0.escaped(asASCII: true) : String($0) }.joined()
        return escaped.count > 40 ? escaped.prefix(39) + "…" : escaped
    }

    /// Reads a trace file; messages name it `name` (the path as the user wrote it).
    public init(contentsOf path: String, name: String? = nil) throws(Invalid) {
        let name = name ?? path
        // Said in words: Foundation's own for a folder was "(NSCocoaErrorDomain error 256.)".
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
            throw Invalid(description: "\(name): there is no such file")
        }
        if isFolder.boolValue { throw Invalid(description: "\(name): is a folder, not a trace file") }
        guard FileManager.default.isReadableFile(atPath: path) else { throw Invalid(description: "\(name): cannot read it (permission denied)") }
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw Invalid(description: "\(name): cannot read the trace as text (UTF-8); a Mahimahi trace is one whole number of milliseconds per line")
        }
        try self.init(parsing: text, name: name)
    }

    /// The length of one pass, after which the trace repeats.
    public var periodNanoseconds: Int64 { milliseconds[milliseconds.count - 1] * 1_000_000 }

    /// The average rate the trace offers, in bits per second.
    public var meanBitsPerSecond: Double {
        Double(milliseconds.count * Self.opportunityBytes * 8) / (Double(periodNanoseconds) / 1e9)
    }

    /// The time of opportunity `index` (counting across repetitions), in ns from the trace's start.
    public func time(ofOpportunity index: Int) -> Int64 {
        let (pass, position) = index.quotientAndRemainder(dividingBy: milliseconds.count)
        return Int64(pass) * periodNanoseconds + milliseconds[position] * 1_000_000
    }

    /// The first opportunity at or after `offset` ns from the trace's start.
    public func firstOpportunity(atOrAfter offset: Int64) -> Int {
        let pass = Int(offset / periodNanoseconds)
        let within = offset - Int64(pass) * periodNanoseconds
        var low = 0, high = milliseconds.count
        while low < high {
            let middle = (low + high) / 2
            if milliseconds[middle] * 1_000_000 < within { low = middle + 1 } else { high = middle }
        }
        return pass * milliseconds.count + low
    }

    public var description: String {
        let mbit = (meanBitsPerSecond / 1e5).rounded() / 10
        let last = milliseconds[milliseconds.count - 1]
        let period = last < 1000 ? "\(last) ms" : "\(last / 1000) s"
        return "trace \((name as NSString).lastPathComponent) (\(mbit) Mbit/s mean over \(period))"
    }
}
