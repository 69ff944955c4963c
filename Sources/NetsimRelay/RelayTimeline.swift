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
    /// Connection ids, unique across the relays sharing this timeline.
    let numbering = ConnectionNumbering()
    private let lifts = NIOLockedValueBox<[PendingLift]>([])

    /// A window's end still to be logged.
    private struct PendingLift {
        var task: Scheduled<Void>
        /// When the window began (``SystemClock`` nanoseconds).
        var begins: Int64
        var fault: FaultName
        var log: EventLog
        /// Set by whichever logs the lift: its task, or ``RelayTimeline/cancel()``.
        var logged = false
    }

    public init() { start = SystemClock().now() }

    /// A timeline that started at `start` (tests: one that began a while ago, without waiting).
    init(start: Int64) { self.start = start }

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
            // Each lift is logged once: by its task, or by ``cancel()`` if that comes first.
            lifts.withLockedValue { lifts in
                let index = lifts.count
                let task = loop.scheduleTask(in: .nanoseconds(max(0, (offset + lasts).nanoseconds - elapsed))) { [self] in
                    let due = self.lifts.withLockedValue { lifts in
                        defer { lifts[index].logged = true }
                        return !lifts[index].logged
                    }
                    if due { log.record(.faultLifted(fault: name)) }
                }
                lifts.append(PendingLift(task: task, begins: start + offset.nanoseconds, fault: name, log: log))
            }
        }
    }

    /// Cancels the lifts still to come (the proxy stops). A window that has begun is logged as
    /// lifted now, cut short, so each `fault_added … for D` has its end in the log.
    public func cancel() {
        let now = SystemClock().now()
        let cut = lifts.withLockedValue { lifts in
            defer { for index in lifts.indices { lifts[index].logged = true } }
            return lifts.filter { !$0.logged }
        }
        for lift in cut {
            lift.task.cancel()
            if lift.begins <= now { lift.log.record(.faultLifted(fault: lift.fault, cutShort: "proxy stopped")) }
        }
    }
}
