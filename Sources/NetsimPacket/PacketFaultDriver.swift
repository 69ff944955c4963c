#if canImport(Glibc)
import Dispatch
import NetsimCore
import NetsimFaults

/// Plays a shell's fault timeline on its packet path: starts and ends each fault on time, judges
/// every packet through ``PacketFaultState``, changes the namespace for the faults that need it
/// (`offline`, `handover`) and records all of it in the event log.
///
/// Used on the packet path's thread only, except for the namespace changes: those are `ip`
/// commands taking milliseconds, run in order on a queue of their own so that packets keep
/// moving meanwhile (the fault's effect on packets starts at once, on the path).
final class PacketFaultDriver {
    private let namespace: PacketNamespace
    private let events: EventLog?
    private var state: PacketFaultState
    /// (time, fault index, starts) in time order; ends before starts at the same instant.
    private var transitions: [(time: Int64, index: Int, starts: Bool)]
    private var schedule: [ScheduledPacketFault]
    private var next = 0
    /// Faults added while the path runs (``add(_:id:at:)``), by the caller's id → schedule index.
    private var added: [PacketFaultID: Int] = [:]
    /// Schedule indexes whose fault has started, and those that have ended.
    private var started: Set<Int> = []
    private var ended: Set<Int> = []
    private let origin: Int64
    private let commands = DispatchQueue(label: "netsim packet faults")

    init(schedule: [ScheduledPacketFault], namespace: PacketNamespace, events: EventLog?, origin: Int64) {
        self.schedule = schedule
        self.namespace = namespace
        self.events = events
        self.origin = origin
        state = PacketFaultState(plan: namespace.plan)
        var transitions: [(time: Int64, index: Int, starts: Bool)] = []
        for (index, fault) in schedule.enumerated() {
            transitions.append((origin + fault.start, index, true))
            if let end = fault.end { transitions.append((origin + end, index, false)) }
        }
        self.transitions = Self.sorted(transitions)
        guard !schedule.isEmpty else { return }
        events?.rebase(toMonotonic: origin)
        // Logged now, not at the origin: the log's lines before them (the seed) were written
        // after the origin, and a line at 0 after them went back in time (QA 45).
        for fault in schedule {
            events?.record(.faultAdded(fault: fault.fault.name, rule: fault.description))
        }
    }

    private static func sorted(_ transitions: [(time: Int64, index: Int, starts: Bool)]) -> [(time: Int64, index: Int, starts: Bool)] {
        transitions.sorted { ($0.time, $0.starts ? 1 : 0, $0.index) < ($1.time, $1.starts ? 1 : 0, $1.index) }
    }

    /// Adds a fault that starts at `now` (a scenario's timeline step) and lasts `length`
    /// nanoseconds (nil: until lifted); `id` lifts it later.
    func add(_ fault: PacketFault, length: Int64?, id: PacketFaultID, at now: Int64) {
        let index = schedule.count
        let scheduled = ScheduledPacketFault(fault, start: now - origin, length: length)
        schedule.append(scheduled)
        added[id] = index
        // Written without its start (the path's clock, not the caller's): it starts now.
        events?.record(.faultAdded(fault: fault.name, rule: ScheduledPacketFault(fault, start: 0, length: length).description), at: now)
        var pending = Array(transitions[next...]) + [(now, index, true)]
        if let length { pending.append((now.addingSaturating(length), index, false)) }
        transitions = Self.sorted(pending)
        next = 0
    }

    /// Lifts the fault added as `id` at `now`: it ends now if it is acting, and never starts if
    /// it has not (a no-op once it has ended).
    func lift(_ id: PacketFaultID, at now: Int64) {
        guard let index = added[id], !ended.contains(index) else { return }
        var pending = Array(transitions[next...]).filter { $0.index != index }
        if started.contains(index) { pending.append((now, index, false)) }
        transitions = Self.sorted(pending)
        next = 0
    }

    /// Lifts every fault added with ``add(_:length:id:at:)`` (`clear: all`).
    func liftAll(at now: Int64) {
        for id in added.keys.sorted(by: { added[$0]! < added[$1]! }) { lift(id, at: now) }
    }

    /// When the next fault starts or ends; nil when the timeline is played out.
    var nextTime: Int64? { next < transitions.count ? transitions[next].time : nil }

    /// Starts and ends every fault due by `now`; a handover moves `filter` to the new addresses.
    func advance(to now: Int64, filter: inout PacketFilter) {
        while next < transitions.count, transitions[next].time <= now {
            let step = transitions[next]
            next += 1
            let fault = schedule[step.index].fault
            if step.starts {
                started.insert(step.index)
                begin(fault, at: step.time, filter: &filter)
            } else {
                ended.insert(step.index)
                state.end(fault)
                if fault == .offline, !state.isActive(.offline) {
                    // Lifted once the interface is back: what a client inside sees.
                    let addresses = state.clientAddresses
                    run(fault) { [events, namespace] in
                        try namespace.bringInterfaceUp(addresses: addresses)
                        events?.record(.faultLifted(fault: fault.name))
                    }
                } else if fault != .handover, state.isActive(fault) {
                    // Another rule of the same fault still acts: "lifted" read as the interface
                    // coming back while it stayed down (QA 63).
                    let rule = schedule[step.index].description
                    events?.record(.faultFired(fault: fault.name, detail: "\(rule) ended; \(fault.name) stays in force under another rule"), at: step.time)
                } else {
                    events?.record(.faultLifted(fault: fault.name), at: step.time)
                }
            }
        }
    }

    private func begin(_ fault: PacketFault, at time: Int64, filter: inout PacketFilter) {
        let wasOffline = state.isActive(.offline)
        let before = state.clientAddresses
        state.begin(fault)
        // Packets feel a fault from its start; offline and handover are recorded once the
        // namespace has changed (an `ip` command later), when a client inside can see them.
        let detail: String
        switch fault {
        case .offline:
            let down = "the namespace's interface is down: connects fail with ENETUNREACH, open connections hear nothing"
            if wasOffline {
                events?.record(.faultFired(fault: fault.name, detail: down), at: time)
            } else {
                run(fault) { [events, namespace] in
                    try namespace.takeInterfaceDown()
                    events?.record(.faultFired(fault: fault.name, detail: down))
                }
            }
            return
        case .handover:
            let after = state.clientAddresses
            filter.move(to: after)
            run(fault) { [events, namespace] in
                let closed = try namespace.moveClient(from: before, to: after, interfaceDown: wasOffline)
                let sockets = closed.map { "\($0) sockets bound to it destroyed (ECONNABORTED)" }
                    ?? "ss -K is not available here: sockets bound to it hang until their own timeouts"
                events?.record(.faultFired(fault: fault.name, detail: "the namespace's address moved from \(before.v4) to \(after.v4); \(sockets)"))
            }
            return
        case .blackhole:
            detail = "every packet vanishes both ways: connects wait out the SYN retries"
        case .udpBlock(let port):
            detail = port.map { "UDP to and from host port \($0) vanishes; TCP passes" } ?? "every UDP datagram vanishes; TCP passes"
        case .stale:
            detail = "the host side forgets every open connection: the client's next segment on one is answered with RST"
        }
        events?.record(.faultFired(fault: fault.name, detail: detail), at: time)
    }

    /// Runs a namespace change off the packet path's thread; a failure is in the event log.
    private func run(_ fault: PacketFault, _ change: @escaping @Sendable () throws -> Void) {
        commands.async { [events] in
            do { try change() } catch {
                events?.record(.faultFired(fault: fault.name, detail: "could not change the namespace: \(error)"))
            }
        }
    }

    /// The fate of a packet; `refused` is the filter's reason when it refused it (then only a
    /// handover can claim it).
    func judge(_ packet: UnsafeRawBufferPointer, header: IPHeader?, refused: Bool, direction: Direction, now: Int64) -> PacketFaultVerdict {
        let verdict: PacketFaultVerdict
        if refused {
            guard let header, let claimed = state.judgeRefused(header, direction: direction) else { return .pass }
            verdict = claimed
        } else {
            guard let header, !state.isQuiet else { return .pass }
            verdict = state.judge([UInt8](packet), header: header, direction: direction)
        }
        switch verdict {
        case .pass: break
        case .drop(let name): events?.record(.dropped(direction, count: packet.count, fault: name), at: now)
        case .reset(let name, _, _, let detail):
            events?.record(.dropped(direction, count: packet.count, fault: name), at: now)
            events?.record(.faultFired(fault: name, detail: detail), at: now)
        }
        return verdict
    }

    /// Waits for the namespace changes still running (the namespace is about to be deleted).
    /// The path stopped: each window still open (a fault with an end) ends with it, `cut_short`,
    /// as a relay's stop cuts its `--fault-for` windows (QA 67: a shell stopped inside a window
    /// left it without an end). A fault without an end is in force until the end, as the
    /// relay's until `listener_closed`.
    func finish() {
        commands.sync {}
        for index in started.subtracting(ended).sorted() where schedule[index].end != nil {
            events?.record(.faultLifted(fault: schedule[index].fault.name, cutShort: "packet link stopped"))
        }
        ended.formUnion(started)
        events?.flush()
    }
}
#endif
