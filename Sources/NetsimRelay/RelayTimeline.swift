import NIOConcurrencyHelpers
import NIOCore
import NetsimCore
import NetsimFaults

/// One timeline and one numbering of connections for relays that act as one: `netsim proxy`
/// starts a relay per destination, on first use, and gives them all the proxy's timeline.
///
/// Without it each relay counted `--fault-at` from its own start (a destination first used
/// at 12 s saw a fault meant for 5 s at 17 s) and numbered its connections from 1, so the
/// proxy's event log had a `conn 1` per destination and the seeded decisions (which
/// connections a `--fault-probability` fault hits, their loss) were the same for each
/// destination's first connection.
///
/// The rules' own events are the timeline's too (``announce(_:to:on:)``): a relay on a shared
/// timeline logs what its faults do to connections, not `fault_added` or `fault_lifted`.
public final class RelayTimeline: Sendable {
    /// The instant `--fault-at` counts from (``SystemClock`` nanoseconds): when this was made.
    public let start: Int64
    private let nextConnection = NIOLockedValueBox<UInt64>(1)
    private let lifts = NIOLockedValueBox<[Scheduled<Void>]>([])

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

    /// Logs each rule once, now (`fault_added`), and its lift when a window on this timeline
    /// ends (`fault_lifted`, at `--fault-at` + `--fault-for`, or `--fault-for` for a rule in
    /// force from the start). A per-connection rule (`--fault-after`) has no such window: its
    /// lifts are each connection's. Each relay logging its rules when a destination was first
    /// used repeated them per destination, and logged a rule whose window had already passed.
    public func announce(_ rules: [FaultRule], to log: EventLog, on loop: any EventLoop) {
        let elapsed = SystemClock().now() - start
        for rule in rules {
            log.record(.faultAdded(fault: rule.kind.faultName, rule: rule.description))
            let offset: Duration
            switch rule.trigger {
            case .immediately: offset = .zero
            case .at(let at): offset = at
            case .after: continue
            }
            guard let lasts = rule.lasts else { continue }
            let name = rule.kind.faultName
            let lift = loop.scheduleTask(in: .nanoseconds(max(0, (offset + lasts).nanoseconds - elapsed))) {
                log.record(.faultLifted(fault: name))
            }
            lifts.withLockedValue { $0.append(lift) }
        }
    }

    /// Cancels the lifts still to come (the proxy stops).
    public func cancel() {
        for lift in lifts.withLockedValue({ $0 }) { lift.cancel() }
    }
}
