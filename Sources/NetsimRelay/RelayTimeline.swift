import NIOConcurrencyHelpers
import NetsimCore

/// One timeline and one numbering of connections for relays that act as one: `netsim proxy`
/// starts a relay per destination, on first use, and gives them all the proxy's timeline.
///
/// Without it each relay counted `--fault-at` from its own start (a destination first used
/// at 12 s saw a fault meant for 5 s at 17 s) and numbered its connections from 1, so the
/// proxy's event log had a `conn 1` per destination and the seeded decisions (which
/// connections a `--fault-probability` fault hits, their loss) were the same for each
/// destination's first connection.
public final class RelayTimeline: Sendable {
    /// The instant `--fault-at` counts from (``SystemClock`` nanoseconds): when this was made.
    public let start: Int64
    private let nextConnection = NIOLockedValueBox<UInt64>(1)

    public init() { start = SystemClock().now() }

    /// A timeline that started at `start` (tests: one that began a while ago, without waiting).
    init(start: Int64) { self.start = start }

    /// The next connection's id, unique across the relays sharing this timeline.
    func allocateConnectionID() -> ConnectionID {
        nextConnection.withLockedValue { next in
            defer { next += 1 }
            return ConnectionID(next)
        }
    }
}
