import NetsimCore
import NetsimLink

extension ConnectionMachine {
    /// Applies a new link model to bytes arriving from now on; with `now`, a new rate also
    /// applies to the bytes queued at the old one's bottleneck (``ShapedDirection/update(link:roundTripNanoseconds:now:)``).
    public mutating func update(link: LinkConfiguration, now: Int64? = nil) {
        self.link = link
        up.update(link: link.up, roundTripNanoseconds: link.roundTripNanoseconds, now: now)
        down.update(link: link.down, roundTripNanoseconds: link.roundTripNanoseconds, now: now)
        if let now {
            for direction in Direction.allCases {
                cancelReleaseTimer(direction)
                deliverDue(direction, now: now)
            }
        }
    }

    /// Says, once per direction, that the loss model's simulated sender gave up: the stream
    /// goes silent that way for good, which a relay that said nothing left unexplained. Logged
    /// when the model decides it, as the segment is handed over; `after` says when the sender
    /// gives up in the model's time.
    mutating func logGivingUp(_ direction: Direction, after: Int64) {
        let way = direction == .up ? "up (client → server)" : "down (server → client)"
        log(.faultFired(fault: .segmentLoss, detail: "a segment \(way) sent now is lost \(LossRecovery.maximumConsecutiveLosses) times in a row: "
            + "the simulated sender gives up \(formatNanoseconds(after)) later (Linux's tcp_retries2), and nothing more is delivered that way; "
            + "the far side sees silence until its own timeout"))
    }

    // MARK: Delivery

    /// Queues (or writes) bytes towards their destination; queued bytes count as arriving at
    /// `arrivedAt` (default: now).
    mutating func forward(_ chunk: Chunk, _ direction: Direction, now: Int64, arrivedAt: Int64? = nil) {
        if observesHTTP { actions.append(.observe(direction, chunk)) }
        let destination = Leg.destination(direction)
        if lane(direction, { $0.canBypass }), !holds(direction), hasLeg(destination) {
            actions.append(.write(destination, chunk))
            withLeg(direction == .up ? .client : .upstream) { $0.unflushed += chunk.count }
            withLane(direction) { $0.deliveredBytes += chunk.count }
        } else {
            let sent = sendTime(direction, min(now, arrivedAt ?? now))
            let delay = withLane(direction) { $0.enqueue(chunk, at: sent) }
            if delay == nil, let after = withLane(direction, { $0.takeNewsOfGivingUp() }) { logGivingUp(direction, after: after) }
            if reportsDelays, let delay, lane(direction, { $0.isImpaired }) { actions.append(.delayed(direction, nanoseconds: delay)) }
            deliverDue(direction, now: now)
        }
        updateReadGates()
    }

    /// Writes every queued piece of `direction` that is due, then arms the timer for the next.
    mutating func deliverDue(_ direction: Direction, now: Int64) {
        let destination = Leg.destination(direction)
        guard !holds(direction), hasLeg(destination), phase != .finished else { return }
        var written = 0
        while let entry = withLane(direction, { $0.popDue(now: now) }) {
            switch entry {
            case .data(let chunk, _):
                actions.append(.write(destination, chunk))
                written += chunk.count
            case .marker(let marker, _):
                flushDelivered(written, direction)
                written = 0
                perform(marker, direction: direction, now: now)
                if phase == .finished { return }
            }
        }
        flushDelivered(written, direction)
        armReleaseTimer(direction)
        updateReadGates()
    }

    private mutating func flushDelivered(_ count: Int, _ direction: Direction) {
        guard count > 0 else { return }
        actions.append(.flush(.destination(direction)))
        withLane(direction) { $0.deliveredBytes += count }
        if observesHTTP { logHTTPSent(direction) }
        log(.bytes(direction, count: count))
    }

    private mutating func perform(_ marker: ShapedDirection<Chunk>.Marker, direction: Direction, now: Int64) {
        let destination = Leg.destination(direction)
        switch marker {
        case .fin:
            // The HTTP layer is this wire layer's upstream: its FIN, when it ends the connection
            // itself, is the relay's (QA 50: `half_closed` by upstream, then `closed` by relay).
            log(.halfClosed(by: direction == .up ? .client : closedByHTTPLayer ? .relay : .upstream))
            shutdownOutput(destination)
        case .rst:
            resetLeg(destination)
        case .endConnection(let fault, let how, let detail):
            actingFault = fault
            if how == .fin {
                closeGracefully(detail: detail)
            } else {
                resetBoth(detail: detail, afterSentTo: destination)
            }
        }
    }

    private mutating func armReleaseTimer(_ direction: Direction) {
        guard let next = lane(direction, { $0.nextReleaseTime }), next != Release.neverNanoseconds else { return }
        if lane(direction, { $0.timerDeadline }) <= next { return }
        withLane(direction) { $0.timerDeadline = next }
        actions.append(.arm(.release(direction), at: next))
    }

    mutating func cancelReleaseTimer(_ direction: Direction) {
        guard lane(direction, { $0.timerDeadline }) != .max else { return }
        withLane(direction) { $0.timerDeadline = .max }
        actions.append(.cancel(.release(direction)))
    }

    /// Whether bytes travelling `direction` are held back by a fault.
    func holds(_ direction: Direction) -> Bool { direction == .up ? holding.up : holding.down }

    /// The fault holding `direction` back, if one does.
    func holdingFault(_ direction: Direction) -> FaultName? {
        faults.last { $0.effect.holds(direction) }?.name
    }

    // MARK: Backpressure

    /// A source is read only while its direction holds less than the buffer limit (with
    /// hysteresis down to half) and its destination's socket is taking bytes.
    mutating func updateReadGates() {
        setReads(.client, readAllowed(from: .client))
        if upstream == .connected { setReads(.upstream, readAllowed(from: .upstream)) }
    }

    private mutating func setReads(_ leg: Leg, _ allowed: Bool) {
        guard self.leg(leg).readsAllowed != allowed else { return }
        withLeg(leg) { $0.readsAllowed = allowed }
        actions.append(.setReads(leg, allowed))
    }

    /// While the upstream connect is pending the client is read too: its bytes wait in the
    /// (bounded) up queue, and a reset from it is noticed at once.
    private mutating func readAllowed(from leg: Leg) -> Bool {
        if discarding || stale != nil { return true }
        let direction = leg.outgoing
        if leg == .client, standIn != nil { return !holding.up }
        guard !holds(direction), phase == .relaying || (phase == .connecting && leg == .client) else { return false }
        let queued = lane(direction) { $0.heldCost }
        let limit = bufferLimit
        if queued >= limit {
            withLeg(leg) { $0.paused = true }
        } else if queued <= limit / 2 {
            withLeg(leg) { $0.paused = false }
        }
        let destination = Leg.destination(direction)
        let writable = hasLeg(destination) ? self.leg(destination).writable : phase == .connecting
        return !self.leg(leg).paused && writable
    }

    // MARK: Closing legs

    mutating func shutdownOutput(_ leg: Leg) {
        guard hasLeg(leg), !self.leg(leg).outputClosed else { return }
        withLeg(leg) { $0.outputClosed = true }
        actions.append(.shutdownOutput(leg))
    }

    /// - Parameter afterSent: once what was written to the leg has reached its peer (a cut's
    ///   kept bytes), not at once.
    mutating func resetLeg(_ leg: Leg, afterSent: Bool = false) {
        guard hasLeg(leg), !self.leg(leg).closedByRelay else { return }
        withLeg(leg) {
            $0.outputClosed = true
            $0.closedByRelay = true
        }
        actions.append(afterSent ? .resetAfterSent(leg) : .reset(leg))
    }

    mutating func closeLeg(_ leg: Leg) {
        guard hasLeg(leg), !self.leg(leg).closedByRelay else { return }
        withLeg(leg) {
            $0.outputClosed = true
            $0.closedByRelay = true
        }
        actions.append(.close(leg))
    }

    // MARK: End of life

    mutating func checkFinished() {
        guard phase != .finished, !client.active else { return }
        if upstream == .inFlight { return }  // its completion closes the new leg and finishes us
        if upstream == .connected, server.active { return }
        finish()
    }

    private mutating func finish() {
        phase = .finished
        recomputePlain()
        // Bytes still held (a blackhole's, a stall's, a delay's when a side reset) never arrive:
        // said, not lost silently, and the requests in them never reached the server.
        for direction in Direction.allCases {
            let lost = withLane(direction) { $0.discardAll() }
            cancelReleaseTimer(direction)
            if lost > 0 { log(.dropped(direction, count: lost, fault: holdingFault(direction) ?? .closing)) }
        }
        unsentHTTP = ([], [])
        // The executor drops the connection first, so that whoever sees `closed` in the log
        // finds it gone from the relay.
        actions.append(.finished)
        let (by, how) = ending ?? (.client, .fin)
        log(.closed(by: by, how: how, upBytes: up.deliveredBytes, downBytes: down.deliveredBytes))
    }
}
