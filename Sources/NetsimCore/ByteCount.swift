/// A byte count as people write it: `1400`, `64KB`, `1KiB`, `10MB`, `1MiB`.
/// `KB`/`MB`/`GB` are decimal; `KiB`/`MiB`/`GiB` are binary.
public struct ByteCount: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var bytes: Int

    public init(_ bytes: Int) { self.bytes = bytes }

    public static let allowedForms = "a whole number of bytes, optionally with a unit: 1400, 64KB, 1KiB, 10MB, 1MiB, 1GB"

    public init(parsing text: String) throws {
        let error = UnitParseError(input: text, expected: "a byte count", allowedForms: ByteCount.allowedForms)
        guard let (number, unit) = splitNumberAndUnit(text), number >= 0 else { throw error }
        let factors: [String: Double] = [
            "": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9,
            "kib": 1024, "mib": 1_048_576, "gib": 1_073_741_824,
        ]
        guard let factor = factors[unit.lowercased()] else { throw error }
        let value = (number * factor).rounded()
        guard value == number * factor || factor > 1, value < Double(Int.max) else { throw error }
        self.init(Int(value))
    }

    public var description: String {
        switch bytes {
        case 1_048_576... where bytes % 1_048_576 == 0: return "\(bytes / 1_048_576)MiB"
        case 1024... where bytes % 1024 == 0: return "\(bytes / 1024)KiB"
        default: return "\(bytes)"
        }
    }

    public static func < (a: ByteCount, b: ByteCount) -> Bool { a.bytes < b.bytes }
}
