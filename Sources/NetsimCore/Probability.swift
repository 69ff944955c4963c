import Foundation

/// A probability written as a percentage: `2%`, `0.5%`, `100%`.
///
/// A bare number is refused on purpose: `--loss 1` could mean 1% or 100%, and netsim does not guess.
public struct Probability: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The probability as a fraction in 0...1.
    public var fraction: Double

    public init(fraction: Double) {
        precondition((0...1).contains(fraction), "probability out of range: \(fraction)")
        self.fraction = fraction
    }

    public static func percent(_ p: Double) -> Probability { Probability(fraction: p / 100) }
    public static let zero = Probability(fraction: 0)
    public static let certain = Probability(fraction: 1)

    public static let allowedForms = "a percentage from 0% to 100%: 2%, 0.5%, 100%"

    public init(parsing text: String) throws {
        let error = UnitParseError(input: text, expected: "a percentage", allowedForms: Probability.allowedForms)
        guard let (number, unit) = splitNumberAndUnit(text), unit == "%", number <= 100 else { throw error }
        self.init(fraction: number / 100)
    }

    /// `2%`, `0.5%`: three decimals at most, unless they would hide what the value is: a loss
    /// of 0.0001% is not `0%` (QA 44: the banner said "loss 0%" for a link losing segments),
    /// nor is 99.9999% `100%`. Those get the digits that tell them apart.
    public var description: String {
        let percent = fraction * 100
        var text = formatTrimmed(percent)
        var digits = 4
        while (fraction > 0 && text == "0") || (fraction < 1 && text == "100"), digits <= 12 {
            text = trimmingFractionZeros(String(format: "%.\(digits)f", percent))
            digits += 1
        }
        return text + "%"
    }

    public static func < (a: Probability, b: Probability) -> Bool { a.fraction < b.fraction }
}
