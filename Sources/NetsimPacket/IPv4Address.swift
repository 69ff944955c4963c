/// An IPv4 address as the 32-bit number the packet carries (network order read as big-endian).
public struct IPv4Address: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var value: UInt32

    public init(_ value: UInt32) { self.value = value }

    public init(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) {
        value = UInt32(a) << 24 | UInt32(b) << 16 | UInt32(c) << 8 | UInt32(d)
    }

    /// Parses a dotted quad; nil for anything else.
    public init?(text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map { UInt8($0) }
        guard parts.count == 4, let a = parts[0], let b = parts[1], let c = parts[2], let d = parts[3] else { return nil }
        self.init(a, b, c, d)
    }

    /// Dotted quad, e.g. `198.18.0.1`.
    public var description: String {
        "\(value >> 24).\(value >> 16 & 0xFF).\(value >> 8 & 0xFF).\(value & 0xFF)"
    }

    public static func < (a: IPv4Address, b: IPv4Address) -> Bool { a.value < b.value }
}
