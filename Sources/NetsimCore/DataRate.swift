/// A data rate in bits per second, parsed from the spellings people use: `256kbit`, `2mbit`,
/// `1gbit`, `64kbps`, `100KB/s`, `1.5MB/s`.
///
/// Prefixes are decimal (k = 1000), as in tc, Network Link Conditioner and Toxiproxy.
/// `bit`, `bps` and `bit/s` count bits; `B/s` and `Bps` (an upper-case B) count bytes. Unlike
/// tc, where `mbps` is megabytes, a lower-case `mbps` is megabits here, as most people mean it.
public struct DataRate: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var bitsPerSecond: Double

    public init(bitsPerSecond: Double) { self.bitsPerSecond = bitsPerSecond }

    public static func kbit(_ v: Double) -> DataRate { DataRate(bitsPerSecond: v * 1e3) }
    public static func mbit(_ v: Double) -> DataRate { DataRate(bitsPerSecond: v * 1e6) }
    public static func gbit(_ v: Double) -> DataRate { DataRate(bitsPerSecond: v * 1e9) }

    public var bytesPerSecond: Double { bitsPerSecond / 8 }

    public static let allowedForms =
        "a number with a rate unit: 8kbit, 256kbit, 2mbit, 1gbit, 64kbps, 100KB/s, 1.5MB/s (bit units: bit, kbit, mbit, gbit, bps, kbps, mbps, gbps; byte units, an upper-case B: B/s, KB/s, MB/s, GB/s, Bps, KBps, MBps, GBps)"

    /// The range ``init(parsing:)`` takes: from 1 bit/s (below it nothing would ever move) to
    /// 10 Tbit/s (above any link a relay carries; the models' arithmetic stays exact).
    public static let parsedRange = 1.0...10e12

    /// Parses a rate such as `256kbit` or `100KB/s`, within ``parsedRange``.
    public init(parsing text: String) throws {
        try self.init(parsingUnbounded: text)
        guard DataRate.parsedRange.contains(bitsPerSecond) else {
            throw UnitParseError(input: text, expected: "a data rate from 1bit to 10000gbit", allowedForms: DataRate.allowedForms)
        }
    }

    private init(parsingUnbounded text: String) throws {
        let error = UnitParseError(input: text, expected: "a data rate", allowedForms: DataRate.allowedForms)
        guard let (number, rawUnit) = splitNumberAndUnit(text) else { throw error }
        // 0 is a number, not a misspelling: say the range (it said "is not a data rate").
        guard number > 0 else {
            throw UnitParseError(input: text, expected: "a data rate from 1bit to 10000gbit (0 would never move a byte; leave the rate out for no limit)",
                                 allowedForms: DataRate.allowedForms)
        }
        let unit = rawUnit.replacingSlashSeconds()
        let lower = unit.lowercased()
        let bitUnits: [String: Double] = [
            "bit": 1, "bps": 1, "b": 1,
            "kbit": 1e3, "kbps": 1e3, "kb": 1e3, "k": 1e3,
            "mbit": 1e6, "mbps": 1e6, "mb": 1e6, "m": 1e6,
            "gbit": 1e9, "gbps": 1e9, "gb": 1e9, "g": 1e9,
        ]
        let byteUnits: [String: Double] = ["B": 8, "KB": 8e3, "kB": 8e3, "MB": 8e6, "GB": 8e9]
        if rawUnit.hasSuffix("/s"), let factor = byteUnits[unit] {
            // Upper-case B followed by /s: bytes per second (100KB/s).
            self.init(bitsPerSecond: number * factor)
        } else if unit.hasSuffix("Bps"), let factor = byteUnits[String(unit.dropLast(2))] {
            // Upper-case B before ps: bytes too (1MBps). It was read as mbps, megabits, a link
            // 8× slower than asked (QA 63).
            self.init(bitsPerSecond: number * factor)
        } else if rawUnit.hasSuffix("/s"), unit.hasSuffix("bit"), let factor = bitUnits[lower] {
            self.init(bitsPerSecond: number * factor)
        } else if !rawUnit.hasSuffix("/s"), unit.hasSuffix("bit") || lower.hasSuffix("bps"), let factor = bitUnits[lower] {
            self.init(bitsPerSecond: number * factor)
        } else {
            throw error
        }
    }

    public var description: String {
        switch bitsPerSecond {
        case 1e9...: return formatTrimmed(bitsPerSecond / 1e9) + "gbit"
        case 1e6...: return formatTrimmed(bitsPerSecond / 1e6) + "mbit"
        case 1e3...: return formatTrimmed(bitsPerSecond / 1e3) + "kbit"
        default: return formatTrimmed(bitsPerSecond) + "bit"
        }
    }

    public static func < (a: DataRate, b: DataRate) -> Bool { a.bitsPerSecond < b.bitsPerSecond }
}

extension String {
    fileprivate func replacingSlashSeconds() -> String {
        hasSuffix("/s") ? String(dropLast(2)) : self
    }
}
