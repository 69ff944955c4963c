/// Durations as people write them: `30ms`, `1.5s`, `250us`, `2m`, `1h`, `0`.
///
/// netsim uses Swift's `Duration` in its API and signed 64-bit nanoseconds inside the models,
/// where arithmetic on the hot path must be cheap.
extension Duration {
    /// The forms accepted by ``init(parsing:)``, for error messages and `--help`.
    public static let allowedForms = "a number with a unit: 30ms, 1.5s, 250us, 2m, 1h (units ns, us, ms, s, m, h, or spelled out: msec, seconds, minutes…; 0 needs no unit)"

    /// Nanoseconds per unit. The short units are the documented ones; their usual spellings
    /// (`sec`, `msec`, `minutes`, `hour`) are taken too, each family whole: `1sec` worked and
    /// `100msec` did not.
    static let unitScales: [String: Double] = {
        let families: [([String], Double)] = [
            (["ns", "nsec", "nsecs", "nanosecond", "nanoseconds"], 1),
            (["us", "µs", "μs", "usec", "usecs", "microsecond", "microseconds"], 1e3),
            (["ms", "msec", "msecs", "millisecond", "milliseconds"], 1e6),
            (["s", "sec", "secs", "second", "seconds"], 1e9),
            (["m", "min", "mins", "minute", "minutes"], 60e9),
            (["h", "hr", "hrs", "hour", "hours"], 3600e9),
        ]
        return Dictionary(uniqueKeysWithValues: families.flatMap { names, scale in names.map { ($0, scale) } })
    }()

    /// The longest duration ``init(parsing:)`` takes: a year (8760h). Longer ones would overflow
    /// the models' nanosecond arithmetic once added to a clock reading; no link or fault in a
    /// test lasts that long.
    public static let maximumParsed = Duration.seconds(365 * 24 * 3600)

    /// Parses a non-negative duration such as `30ms` or `1.5s`, at most ``maximumParsed``.
    public init(parsing text: String) throws {
        let error = UnitParseError(input: text, expected: "a duration", allowedForms: Duration.allowedForms)
        guard let (number, unit) = splitNumberAndUnit(text) else { throw error }
        let scale: Double
        if unit.isEmpty, number == 0 {
            scale = 1
        } else if let known = Self.unitScales[unit.lowercased()] {
            scale = known
        } else {
            throw error
        }
        let nanos = number * scale
        guard nanos <= Double(Duration.maximumParsed.nanoseconds) else {
            throw UnitParseError(input: text, expected: "a duration netsim can run (at most 8760h, a year)", allowedForms: Duration.allowedForms)
        }
        // A duration above 0 that rounds to none was taken as 0 (QA 52: `0.0000001ns`): a
        // nanosecond is netsim's resolution, and a value finer than it is a mistake.
        guard nanos == 0 || nanos >= 0.5 else {
            throw UnitParseError(input: text, expected: "a duration netsim can hold (0, or 1ns at least: its resolution)", allowedForms: Duration.allowedForms)
        }
        self = .nanoseconds(Int64(nanos.rounded()))
    }

    /// The duration in whole nanoseconds (saturating).
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return product &+ attoseconds / 1_000_000_000
    }

    /// The duration in seconds as a floating-point number.
    public var seconds: Double { Double(nanoseconds) / 1e9 }

    /// A short human spelling that parses back: `30ms`, `1.5s`, `250us`.
    public var compactDescription: String { formatNanoseconds(nanoseconds) }
}

/// Formats nanoseconds the way ``Duration/init(parsing:)`` reads them.
public func formatNanoseconds(_ ns: Int64) -> String {
    let magnitude = abs(Double(ns))
    let (value, unit): (Double, String)
    switch magnitude {
    case 0: return "0"
    case ..<1e3: (value, unit) = (Double(ns), "ns")
    case ..<1e6: (value, unit) = (Double(ns) / 1e3, "us")
    case ..<1e9: (value, unit) = (Double(ns) / 1e6, "ms")
    default: (value, unit) = (Double(ns) / 1e9, "s")
    }
    return formatTrimmed(value) + unit
}

/// Up to three decimals, trailing zeros removed: 1.5, 30, 0.125.
public func formatTrimmed(_ value: Double) -> String {
    trimmingFractionZeros(String(format3: value))
}

/// `2.500` → `2.5`, `3.000` → `3`: a decimal number without the zeros that say nothing.
public func trimmingFractionZeros(_ decimal: String) -> String {
    var text = decimal
    if text.contains(".") {
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
    }
    return text
}

extension String {
    init(format3 value: Double) {
        let scaled = (value * 1000).rounded()
        // Beyond Int64 (no rate or duration netsim parses gets there), the plain rounded number.
        guard abs(scaled) < 9e18 else {
            self = String(describing: value.rounded())
            return
        }
        let negative = scaled < 0
        let whole = Int64(abs(scaled)) / 1000
        let frac = Int64(abs(scaled)) % 1000
        let fracText = String(frac)
        self = (negative ? "-" : "") + String(whole) + "." + String(repeating: "0", count: 3 - fracText.count) + fracText
    }
}
