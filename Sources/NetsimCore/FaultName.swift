/// What a `fault`, `dropped`, `fault_added` or `fault_lifted` event names: a fault of the catalog
/// (`stale`, `outage`, …) or another cause the relay reports the same way (`syn-loss`,
/// `peer reset`, `closing`). Typed, so events are matched by name, never by parsing text.
public struct FaultName: Hashable, Sendable, Comparable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let rawValue: String

    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }

    public var description: String { rawValue }

    public static func < (a: FaultName, b: FaultName) -> Bool { a.rawValue < b.rawValue }

    /// Lost SYNs delayed (or timed out) the upstream connect: the link's loss model, not a fault rule.
    public static let synLoss: FaultName = "syn-loss"
    /// The link's loss model lost one segment so often that its simulated sender gave up.
    public static let segmentLoss: FaultName = "segment-loss"
    /// The connection was closing; bytes that arrived meanwhile were read and dropped.
    public static let closing: FaultName = "closing"
    /// Upstream's h2 GOAWAY, passed on to the client (what it ended is said under this name).
    public static let upstreamGoAway: FaultName = "upstream goaway"
    /// One side reset; what was travelling towards it was dropped.
    public static let peerReset: FaultName = "peer reset"
}
