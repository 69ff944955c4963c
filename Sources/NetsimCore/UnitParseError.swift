/// A value written on a command line or in a scenario that does not parse.
///
/// The message always names the forms that are accepted, so a person can fix the value
/// without opening the documentation.
public struct UnitParseError: Error, CustomStringConvertible, Equatable, Sendable {
    /// The text that failed to parse, as given.
    public var input: String
    /// What kind of value was expected ("a duration", "a data rate", ...).
    public var expected: String
    /// Examples of accepted spellings.
    public var allowedForms: String

    public init(input: String, expected: String, allowedForms: String) {
        self.input = input
        self.expected = expected
        self.allowedForms = allowedForms
    }

    public var description: String {
        "'\(Self.shortened(input))' is not \(expected); write it as \(allowedForms)"
    }

    /// A value as a message quotes it: whole up to 80 characters, else its start and its length
    /// (QA 52: a 100,000-digit latency made a 100,061-character message line).
    static func shortened(_ text: String) -> String {
        text.count <= 80 ? text : "\(text.prefix(60))… (\(text.count) characters)"
    }
}

/// Splits "12.5ms" into (12.5, "ms"). The number may have a leading sign only when allowed.
func splitNumberAndUnit(_ text: String) -> (number: Double, unit: String)? {
    let trimmed = text.trimmingWhitespace()
    var end = trimmed.startIndex
    var sawDigit = false
    var sawDot = false
    while end < trimmed.endIndex {
        let c = trimmed[end]
        if c.isASCII, c.isNumber {
            sawDigit = true
        } else if c == ".", !sawDot {
            sawDot = true
        } else {
            break
        }
        end = trimmed.index(after: end)
    }
    guard sawDigit, let number = Double(trimmed[trimmed.startIndex..<end]), number.isFinite else { return nil }
    let unit = trimmed[end...].trimmingWhitespace()
    return (number, unit)
}

extension StringProtocol {
    func trimmingWhitespace() -> String {
        var s = Substring(self)
        while let f = s.first, f.isWhitespace { s = s.dropFirst() }
        while let l = s.last, l.isWhitespace { s = s.dropLast() }
        return String(s)
    }
}
