import NetsimCore

/// A fault with its place on a timeline, written `NAME[=ARGUMENT][@AT][+FOR]`: `offline@2s+3s`
/// (offline 2 s after the start, for 3 s), `handover@5s`, `udp-block=443`, `stale=rst@1.5s`.
///
/// The fault part is the catalog's own syntax (``FaultCatalog/parse(_:)``), the times are
/// durations (``Swift/Duration/init(parsing:)``): one line carries a whole timeline step, so a
/// command can schedule several faults at different times.
public struct TimedFault: Equatable, Sendable, CustomStringConvertible {
    public var kind: FaultKind
    /// When it starts, after the timeline's origin.
    public var at: Duration
    /// How long it lasts; nil: until the end.
    public var lasts: Duration?

    public init(_ kind: FaultKind, at: Duration = .zero, lasts: Duration? = nil) {
        self.kind = kind
        self.at = at
        self.lasts = lasts
    }

    public static let syntax = "NAME[=ARGUMENT][@AT][+FOR]"

    /// Parses `NAME[=ARGUMENT][@AT][+FOR]`.
    public init(parsing text: String) throws(UnitParseError) {
        var rest = Substring(text)
        var lasts: Duration?
        var at = Duration.zero
        if let plus = rest.lastIndex(of: "+") {
            lasts = try Self.duration(rest[rest.index(after: plus)...], in: text, what: "+FOR")
            rest = rest[..<plus]
        }
        if let sign = rest.lastIndex(of: "@") {
            at = try Self.duration(rest[rest.index(after: sign)...], in: text, what: "@AT")
            rest = rest[..<sign]
        }
        do {
            self.init(try FaultCatalog.parse(String(rest)), at: at, lasts: lasts)
        } catch {
            throw UnitParseError(input: text, expected: error.expected, allowedForms: error.allowedForms)
        }
    }

    private static func duration(_ text: Substring, in whole: String, what: String) throws(UnitParseError) -> Duration {
        do {
            let value = try Duration(parsing: String(text))
            if what == "+FOR", value <= .zero { throw UnitParseError(input: whole, expected: "", allowedForms: "") }
            return value
        } catch {
            throw UnitParseError(input: whole, expected: "a timed fault \(syntax) whose \(what) is a\(what == "+FOR" ? " positive" : "") duration",
                                 allowedForms: "e.g. offline@2s+3s, handover@5s, udp-block=443; durations are \(Duration.allowedForms)")
        }
    }

    /// `offline at 2s for 3s`.
    public var description: String {
        var text = kind.description
        if at > .zero { text += " at \(at.compactDescription)" }
        if let lasts { text += " for \(lasts.compactDescription)" }
        return text
    }

    /// The form it was written in, which parses back to it.
    public var written: String {
        kind.description + (at > .zero ? "@\(at.compactDescription)" : "") + (lasts.map { "+\($0.compactDescription)" } ?? "")
    }
}
