import NetsimCore

extension ConnectionMachine {
    // MARK: Applying and lifting

    /// Applies a fault now. `atAccept` is true while the connection is being set up, when
    /// accept-time faults (reject, slow-connect) still mean something.
    public mutating func apply(_ kind: FaultKind, id: FaultID, atAccept: Bool, now: Int64) {
        self.now = now
        guard phase != .finished, appliedFaults.insert(id).inserted else { return }
        if kind.scope == .accept, !atAccept { return }
        faults.append(ActiveFault(id: id, name: kind.faultName, effect: kind.fault.makeEffect()))
        let lifetime = withFault(at: faults.count - 1) { effect, machine in effect.applied(to: &machine, atAccept: atAccept) }
        if lifetime == .done { faults.removeAll { $0.id == id } }
        faultsChanged(now: now)
    }

    /// The fault stops acting on this connection. A stale connection stays dead, as a real one
    /// whose NAT mapping is gone does.
    public mutating func lift(_ id: FaultID, now: Int64) {
        self.now = now
        guard phase != .finished, let index = faults.firstIndex(where: { $0.id == id }) else { return }
        var removed = faults.remove(at: index)
        log(.faultLifted(fault: removed.name))
        actingFault = removed.name
        actingFaultID = removed.id
        faultsChanged(now: now)
        removed.effect.lifted(from: &self)
        faultsChanged(now: now)
    }

    /// Runs a hook of the fault at `index` with the machine, then stores the fault's new state
    /// (the hook may have changed the list; the fault is found again by id).
    mutating func withFault<R>(at index: Int, _ body: (inout any FaultEffect, inout ConnectionMachine) -> R) -> R {
        let id = faults[index].id
        var effect = faults[index].effect
        actingFault = faults[index].name
        actingFaultID = id
        let result = body(&effect, &self)
        if let again = faults.firstIndex(where: { $0.id == id }) { faults[again].effect = effect }
        return result
    }

    /// Recomputes what the faults in force hold back, and releases what they no longer hold.
    mutating func faultsChanged(now: Int64) {
        let wasHolding = holding
        let hadStandIn = standIn != nil
        holding = (faults.contains { $0.effect.holds(.up) }, faults.contains { $0.effect.holds(.down) })
        holdsConnect = faults.contains { $0.effect.holdsConnect }
        finDelay = (faults.map { $0.effect.finDelay(.up) }.max() ?? 0, faults.map { $0.effect.finDelay(.down) }.max() ?? 0)
        inspectingBytes = faults.contains { $0.effect.inspectsBytes }
        // A connection whose handshake a stand-in answered with a certificate stays with it.
        standIn = impersonating != nil ? nil : faults.last { $0.effect.standIn != nil }?.effect.standIn
        recomputePlain()
        if hadStandIn, standIn == nil { endStandIn(now: now) }
        if !holdsConnect, phase == .connecting, upstream == .held {
            upstream = .waiting
            connectUpstream()
        }
        // A direction a fault starts to hold is a link gone down; one it stops holding comes up,
        // its bytes moved on by the time it was down (ShapedDirection.comeUp).
        for direction in Direction.allCases where !(direction == .up ? wasHolding.up : wasHolding.down) && holds(direction) {
            withLane(direction) { $0.goDown(at: now) }
        }
        for direction in Direction.allCases where (direction == .up ? wasHolding.up : wasHolding.down) && !holds(direction) {
            withLane(direction) { $0.comeUp(at: now) }
            deliverDue(direction, now: now)
        }
        updateReadGates()
    }

    // MARK: What a fault can do

    /// Logs that the acting fault did something.
    public mutating func fire(_ detail: String) {
        log(.faultFired(fault: actingFault, detail: detail))
    }

    /// Resets the client as it is accepted (reject, a refusal below 100%).
    public mutating func resetAtAccept(_ detail: String) {
        fire(detail)
        if ending == nil { ending = (.relay, .rst) }
        phase = .relaying
        recomputePlain()
        resetLeg(.client)
    }

    /// Delays the upstream connect (slow-connect).
    public mutating func delayConnect(by nanoseconds: Int64) {
        connectDelay += nanoseconds
    }

    /// The relay ends the connection now (`how`): it is the one that ended it in the `closed`
    /// event, unless a peer ended it first — and a peer's FIN still queued behind a delay or a
    /// rate, which the drop about to come throws away, never reached the other side: the relay's
    /// close is what that side saw (a server's FIN waiting behind a slow answer, then `rst`: the
    /// client got a reset, and the log said the server closed with FIN).
    mutating func relayEnds(_ how: CloseKind) {
        forgetFINThatNeverArrived()
        if ending == nil { ending = (.relay, how) }
    }

    /// Forgets the ending a peer's FIN set while that FIN is still queued (behind a delay, a
    /// rate or a hold): a drop about to come throws it away, so the other side never saw it.
    mutating func forgetFINThatNeverArrived() {
        if let first = ending, first.how == .fin, first.by != .relay,
           lane(first.by == .client ? .up : .down, { $0.holdsMarker }) {
            ending = nil
        }
    }

    /// The HTTP layer of an intercepted connection (on this machine's wire layer) closes the
    /// connection on its own, an h2 GOAWAY: the close is the relay's in `closed` and in its
    /// `half_closed`, not the client's, whose FIN answering netsim's close_notify arrives first
    /// (QA 48, 49).
    public mutating func httpLayerCloses() {
        relayEnds(.fin)
        closedByHTTPLayer = true
    }

    /// The connection ends because upstream could not be had, where the client holds a
    /// connection to netsim itself (through interception, or a proxy's): `closed` names
    /// upstream, unless an end came first.
    public mutating func endsForWantOfUpstream() {
        if ending == nil { ending = (.upstream, .fin) }
    }

    /// Closes both legs with FIN now; bytes still in flight are dropped (and logged). The legs are
    /// then read and discarded until the peers close, so close(2) never finds unread bytes and
    /// turns the FIN into a reset.
    public mutating func closeGracefully(detail: String) {
        guard phase != .finished, !discarding else { return }
        fire(detail)
        relayEnds(.fin)
        dropQueued()
        discarding = true
        discardedFor = actingFault
        recomputePlain()
        shutdownOutput(.client)
        shutdownOutput(.upstream)
        updateReadGates()
        actions.append(.arm(.closeGrace, at: now + Self.closeGrace))
        checkFinished()
    }

    /// Resets both legs now; `afterSentTo`'s once the bytes already written to it have arrived
    /// (the end of a cut answer: the bytes it keeps are delivered, then the RST).
    public mutating func resetBoth(detail: String, afterSentTo drained: Leg? = nil) {
        guard phase != .finished else { return }
        fire(detail)
        relayEnds(.rst)
        dropQueued()
        resetLeg(.client, afterSent: drained == .client)
        resetLeg(.upstream, afterSent: drained == .upstream)
    }

    /// The connection goes stale: it looks alive, and the client's next bytes are swallowed and
    /// answered with `how`.
    public mutating func goStale(_ how: CloseKind) {
        stale = how
        dropQueued()
        recomputePlain()
        updateReadGates()
    }

    /// Closes the client leg the way a fault says (a stale connection written to, a portal
    /// breaking TLS); the upstream leg gets a plain FIN. Later bytes are read and discarded.
    public mutating func endClientLeg(_ how: CloseKind, detail: String) {
        guard !discarding else { return }
        fire(detail)
        if ending == nil { ending = (.relay, how) }
        discarding = true
        discardedFor = actingFault
        recomputePlain()
        if how == .rst {
            resetLeg(.client)
        } else {
            shutdownOutput(.client)
        }
        shutdownOutput(.upstream)
        actions.append(.arm(.closeGrace, at: now + Self.closeGrace))
    }

    /// Arms the acting fault's own timer; its `timerFired` hook runs at `deadline`.
    public mutating func armFaultTimer(at deadline: Int64) {
        guard let id = actingFaultID else { return }
        actions.append(.arm(.fault(id), at: deadline))
    }

    /// When the connection last saw bytes or a close from either side.
    public var lastActivityTime: Int64 { lastActivity }

    /// A random stream of the connection's own for a fault, the same for the same seed.
    public func random(for label: String) -> SeededRandom { random.derived(SeededRandom.label(label)) }

    /// How long a leg closed by a fault may stay half-open before the relay closes it fully.
    static var closeGrace: Int64 { 10_000_000_000 }

    /// Throws away the bytes `direction` still holds back (a FIN or RST behind them stays), as
    /// the acting fault's, and returns how many.
    public mutating func discardQueuedBytes(_ direction: Direction) -> Int {
        let lost = withLane(direction) { $0.discardData() }
        if lost > 0 { log(.dropped(direction, count: lost, fault: actingFault)) }
        updateReadGates()
        return lost
    }

    private mutating func dropQueued() {
        for direction in Direction.allCases {
            let lost = withLane(direction) { $0.discardAll() }
            cancelReleaseTimer(direction)
            if lost > 0 { log(.dropped(direction, count: lost, fault: actingFault)) }
        }
    }
}
