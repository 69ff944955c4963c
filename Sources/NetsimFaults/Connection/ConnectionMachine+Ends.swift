import NetsimCore

/// How a connection's legs end: a peer's FIN or reset, a socket that closed, and the relay's own
/// close of both at shutdown.
extension ConnectionMachine {
    /// The peer on `leg` sent FIN.
    public mutating func inputClosed(on leg: Leg, now: Int64) {
        self.now = now
        guard expectLeg(leg, "a FIN") else { return }
        lastActivity = now
        if phase == .finished { return }
        // Said first, whatever happens next: the FIN was sent (a capture shows it, and the
        // `closed` event says who ended the connection) even where the relay only tidies up.
        if ending == nil { ending = (leg.side, .fin) }
        actions.append(.peerEnded(leg, .fin))
        if discarding {
            closeLeg(leg)
            return
        }
        if stale != nil {
            // The path is dead: nothing reaches the other side. Tidy up this leg only.
            closeLeg(leg)
            if leg == .client, upstream == .connected { shutdownOutput(.upstream) }
            return
        }
        let direction = leg.outgoing
        if observesHTTP { actions.append(.observeEnded(direction)) }
        if leg == .client, upstream == .none, let standIn {
            // No upstream while the relay stands in (outage, portal): it is the server, and
            // closes too.
            actingFault = standIn.faultName
            endAfterQueued(.down, .init(.fin, "the client closed its side; the relay, standing in for the server, closes too"), now: now)
            return
        }
        let hold = direction == .up ? finDelay.up : finDelay.down
        withLane(direction) { $0.enqueue(.fin, at: now, holdFor: hold) }
        deliverDue(direction, now: now)
    }

    /// The peer on `leg` reset the connection (or its socket failed): forward a reset after the
    /// bytes already on their way, and drop what was travelling towards the dead side.
    public mutating func peerReset(_ leg: Leg, now: Int64) {
        self.now = now
        guard expectLeg(leg, "a reset") else { return }
        guard phase != .finished, !self.leg(leg).resetSeen else { return }
        withLeg(leg) { $0.resetSeen = true }
        // A reset after the same side's FIN is how the connection ended for the client; so is
        // one over the other side's FIN still on its way to it, which it never got (QA 57: a
        // client leaving a slow download was logged `closed by upstream, fin`).
        forgetFINThatNeverArrived()
        if ending == nil || (ending?.by == leg.side && ending?.how == .fin) { ending = (leg.side, .rst) }
        actions.append(.peerEnded(leg, .rst))
        let towardsDeadSide = leg.outgoing.reversed
        let lost = withLane(towardsDeadSide) { $0.discardAll() }
        cancelReleaseTimer(towardsDeadSide)
        if lost > 0 { log(.dropped(towardsDeadSide, count: lost, fault: .peerReset)) }
        if stale != nil || discarding {
            if hasLeg(leg.other) { closeLeg(leg.other) }
            return
        }
        let direction = leg.outgoing
        withLane(direction) { $0.enqueue(.rst, at: now) }
        deliverDue(direction, now: now)
    }

    /// The socket of `leg` is closed.
    public mutating func legInactive(_ leg: Leg, now: Int64) {
        self.now = now
        guard expectLeg(leg, "a close") else { return }
        let state = self.leg(leg)
        withLeg(leg) { $0.active = false }
        if !state.closedByRelay, !state.resetSeen, phase != .finished {
            if !lane(leg.outgoing, { $0.sourceFinished }) {
                // A clean EOF that NIO turned straight into a full close (our half of this leg was
                // already shut, so no inputClosed event came): it is the peer's FIN.
                inputClosed(on: leg, now: now)
            } else if !state.outputClosed {
                // The peer had sent FIN and our half was still open, so no orderly close can end
                // the leg: the socket was reset — typically a peer that closed its socket and
                // answered bytes written to it afterwards with RST (the keep-alive race).
                peerReset(leg, now: now)
            }
        }
        checkFinished()
    }

    /// Closes both legs at once (relay shutdown): the relay's close, in the log, also over a
    /// peer's FIN still held back (a blackhole's), which the other side never saw. `unread`: the
    /// bytes each leg's socket holds that the relay never read (a blackhole's, a full buffer's).
    /// close(2) over them sends RST, so that leg is reset, and they are `dropped`: the peer sent
    /// them, and nobody got them (the log said `fin` and nothing of them, the client got a reset).
    public mutating func closeNow(unread: [Leg: Int] = [:]) {
        let resets = [Leg.client, .upstream].filter { hasLeg($0) && !leg($0).closedByRelay && unread[$0, default: 0] > 0 }
        // `closed` says how it ended for the client: a reset of the upstream leg alone (the
        // server's answer a stall=down holds) reaches the client as FIN (QA 44: it said rst).
        relayEnds(resets.contains(.client) ? .rst : .fin)
        for leg in [Leg.client, .upstream] where hasLeg(leg) {
            guard resets.contains(leg) else {
                closeLeg(leg)
                continue
            }
            log(.dropped(leg.outgoing, count: unread[leg, default: 0], fault: holdingFault(leg.outgoing) ?? .closing))
            resetLeg(leg)
        }
        checkFinished()
    }
}
