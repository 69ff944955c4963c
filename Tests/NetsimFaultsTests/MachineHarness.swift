import NetsimCore
import NetsimFaults
import NetsimLink

/// Drives a ``ConnectionMachine`` the way the relay's executor does, with `[UInt8]` chunks and a
/// clock the test moves: what each leg was sent, how each leg was closed, the timers armed and
/// the events logged. No sockets, no event loop, no sleeping.
struct MachineHarness {
    var machine: ConnectionMachine<[UInt8]>
    var now: Int64 = 0
    var timers: [ConnectionTimer: Int64] = [:]
    var sent: [Leg: [UInt8]] = [.client: [], .upstream: [], ]
    /// How the relay ended each leg (FIN, RST), in order.
    var ended: [(Leg, CloseKind)] = []
    var closed: Set<Leg> = []
    /// How each leg's peer ended its side, as the machine told the taps (pcap).
    var peerEnded: [(Leg, CloseKind)] = []
    var readsAllowed: [Leg: Bool] = [:]
    var events: [EventKind] = []
    var connectRequested = false
    var parsed: [[UInt8]] = []
    var finished = false
    /// The delays the machine reported (with `reportsDelays` set).
    var delays: [(Direction, Int64)] = []

    init(link: LinkConfiguration = .unimpaired, faults: [FaultKind] = [], seed: UInt64 = 7, connect: Bool = true, observesHTTP: Bool = false) {
        machine = ConnectionMachine(id: ConnectionID(1), openedAt: 0, link: link, seed: seed, bufferLimit: 1 << 20, observesHTTP: observesHTTP)
        machine.start(faults: faults.enumerated().map { (FaultID(raw: UInt64($0.offset + 1)), $0.element) }, now: 0)
        process()
        if connect { connectIfAsked() }
    }

    /// Completes the upstream connect the machine asked for.
    mutating func connectIfAsked() {
        guard connectRequested else { return }
        connectRequested = false
        _ = machine.upstreamConnected(after: 0, upstreamName: "upstream", now: now)
        process()
    }

    mutating func process() {
        for action in machine.actions {
            switch action {
            case .write(let leg, let bytes): sent[leg, default: []] += bytes
            case .shutdownOutput(let leg): ended.append((leg, .fin))
            case .reset(let leg), .resetAfterSent(let leg): ended.append((leg, .rst))
            case .close(let leg): closed.insert(leg)
            case .setReads(let leg, let allowed): readsAllowed[leg] = allowed
            case .connectUpstream: connectRequested = true
            case .arm(let timer, let at): timers[timer] = at
            case .cancel(let timer): timers[timer] = nil
            case .log(let kind): events.append(kind)
            case .parseRequests(let bytes): parsed.append(bytes)
            case .finished: finished = true
            case .delayed(let direction, let nanoseconds): delays.append((direction, nanoseconds))
            case .peerEnded(let leg, let how): peerEnded.append((leg, how))
            case .flush, .stopParsingRequests, .observe, .observeEnded: break
            }
        }
        machine.actions.removeAll()
    }

    mutating func receive(_ bytes: [UInt8], from leg: Leg) {
        machine.received(bytes, from: leg, now: now)
        machine.readComplete(from: leg)
        process()
    }

    mutating func receive(_ text: String, from leg: Leg) { receive(Array(text.utf8), from: leg) }

    mutating func fin(from leg: Leg) {
        machine.inputClosed(on: leg, now: now)
        process()
    }

    mutating func apply(_ kind: FaultKind, id: UInt64 = 100) {
        machine.apply(kind, id: FaultID(raw: id), atAccept: false, now: now)
        process()
    }

    mutating func lift(_ id: UInt64 = 100) {
        machine.lift(FaultID(raw: id), now: now)
        process()
    }

    /// Moves the clock to `time`, firing every timer due on the way, earliest first.
    mutating func advance(to time: Int64) {
        while let (timer, at) = timers.filter({ $0.value <= time }).min(by: { $0.value < $1.value }) {
            timers[timer] = nil
            now = max(now, at)
            machine.timerFired(timer, now: now)
            process()
        }
        now = time
    }

    mutating func advance(by duration: Duration) { advance(to: now + duration.nanoseconds) }

    func text(_ leg: Leg) -> String { String(decoding: sent[leg] ?? [], as: UTF8.self) }

    func endings(of leg: Leg) -> [CloseKind] { ended.filter { $0.0 == leg }.map(\.1) }

    var firedDetails: [String] {
        events.compactMap { if case .faultFired(_, let detail) = $0 { detail } else { nil } }
    }
}
