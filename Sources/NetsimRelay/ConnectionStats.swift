import NetsimCore

/// Counters of one open connection.
public struct ConnectionStats: Sendable {
    public var id: ConnectionID
    public var deliveredUp: Int
    public var deliveredDown: Int
    public var queuedUp: Int
    public var queuedDown: Int
    /// The most bytes either direction has held at once.
    public var peakQueued: Int
}
