import NIOCore
import NIOHTTP1
import NIOPosix
import NetsimCore
import NetsimLink

/// One client connection through the relay: the client leg, the upstream leg, and a shaped
/// direction each way.
///
/// Everything here runs on the client channel's event loop (the upstream leg is connected on the
/// same loop), so no locks are needed; `@unchecked Sendable` only lets scheduled closures capture it.
final class ConnectionPair: @unchecked Sendable {
    let id: ConnectionID
    let eventLoop: any EventLoop
    let openedAt: Int64
    let relay: Relay
    let client: LegHandler
    var upstream: LegHandler?
    let up: ShapedDirection
    let down: ShapedDirection

    enum Phase { case accepted, connecting, relaying, finished }
    var phase = Phase.accepted
    /// The upstream connect has been started and has not completed yet.
    var connectInFlight = false
    /// A blackhole held back the upstream connect; lifting it starts the connect.
    var connectHeldByBlackhole = false
    /// Who ended the connection first and how (reported in the `closed` event).
    var ending: (by: Side, how: CloseKind)?

    // Fault state.
    var persistentFaults: [FaultID: FaultKind] = [:]
    /// Rules that have acted on this connection.
    var appliedFaults: Set<FaultID> = []
    var stale: CloseKind?
    var connectDelay: Int64 = 0
    var downLimitRemaining: Int?
    /// After the relay closed the connection gracefully, or the upstream never answered:
    /// read and discard until the peers close.
    var discarding = false
    var lastActivity: Int64
    var idleTimer: Scheduled<Void>?
    var timers: [Scheduled<Void>] = []
    /// HTTP observation, when the relay's configuration asks for it.
    var http: HTTPObserver?
    /// While an `outage` or `portal` fault acts: the client's requests, parsed to be answered
    /// by the relay.
    var standInRequests: HTTPStreamDecoder<HTTPServerRequestPart>?
    /// The head of the request being received while the relay stands in.
    var standInHead: HTTPRequestHead?
    /// Client bytes fed to `standInRequests` so far (a portal breaks TLS at the very start).
    var standInBytesParsed = 0
    /// Requests the relay answered itself on this connection.
    var answeredRequests = 0

    /// Sides whose reset has been seen and forwarded.
    private var resetSides: Set<Side> = []
    private var unflushed = [0, 0]  // fast-path bytes written but not yet flushed, per direction
    private var paused = [false, false]  // backpressure hysteresis, per direction
    var random: SeededRandom

    init(id: ConnectionID, relay: Relay, clientChannel: any Channel, link: LinkConfiguration, now: Int64) {
        self.id = id
        self.relay = relay
        self.eventLoop = clientChannel.eventLoop
        self.openedAt = now
        self.lastActivity = now
        self.random = SeededRandom(seed: relay.configuration.seed).derived(id.raw)
        self.client = LegHandler(side: .client)
        let rtt = link.roundTripNanoseconds
        self.up = ShapedDirection(
            direction: .up, shaper: DirectionShaper(link: link.up, roundTripNanoseconds: rtt, random: random.derived(1)))
        self.down = ShapedDirection(
            direction: .down, shaper: DirectionShaper(link: link.down, roundTripNanoseconds: rtt, random: random.derived(2)))
        client.pair = self
    }

    // MARK: Helpers

    var now: Int64 { relay.clock.now() }

    func log(_ kind: EventKind) { relay.eventLog.record(kind, connection: id) }

    func shaped(_ direction: Direction) -> ShapedDirection { direction == .up ? up : down }

    func leg(_ side: Side) -> LegHandler? { side == .client ? client : upstream }

    /// The direction in which bytes read on `side` travel.
    static func direction(from side: Side) -> Direction { side == .client ? .up : .down }

    func destination(_ direction: Direction) -> LegHandler? { direction == .up ? upstream : client }

    var isBlackholed: Bool { persistentFaults.values.contains(.blackhole) }

    // MARK: Events from the legs

    func legActive(_ side: Side) {
        if side == .client, phase == .accepted { relay.start(self) }
    }

    func received(_ buffer: ByteBuffer, from side: Side) {
        let now = self.now
        lastActivity = now
        relay.tap?.received(id, leg: side, buffer, at: now)
        let direction = Self.direction(from: side)
        if discarding || phase == .finished {
            log(.dropped(direction, count: buffer.readableBytes, fault: "closing"))
            return
        }
        if let mode = stale {
            log(.dropped(direction, count: buffer.readableBytes, fault: "stale"))
            if side == .client, !discarding {
                endClientLeg(mode, fault: "stale", detail: "swallowed \(buffer.readableBytes) bytes from the client; closing it with \(mode.rawValue.uppercased())")
            }
            return
        }
        if direction == .up, standInRequests != nil {
            standInReceived(buffer)
            return
        }
        var buffer = buffer
        if direction == .down, let remaining = downLimitRemaining {
            // limit: forward exactly `remaining` more bytes, then close behind them.
            let excess = max(0, buffer.readableBytes - remaining)
            if excess > 0 { log(.dropped(.down, count: excess, fault: "limit")) }
            guard remaining > 0 else { return }
            buffer = buffer.getSlice(at: buffer.readerIndex, length: buffer.readableBytes - excess)!
            downLimitRemaining = remaining - buffer.readableBytes
            forward(buffer, direction, now: now)
            if downLimitRemaining == 0 {
                shaped(.down).enqueue(.closeConnection(fault: "limit", detail: "closed after the bytes the fault allowed"), at: now)
                deliverDue(.down)
            }
            return
        }
        forward(buffer, direction, now: now)
    }

    private func forward(_ buffer: ByteBuffer, _ direction: Direction, now: Int64) {
        if let http { http.observe(buffer, direction) }
        let lane = shaped(direction)
        if lane.canBypass, !isBlackholed, let destination = destination(direction) {
            relay.tap?.sent(id, leg: destination.side, buffer, at: now)
            destination.write(buffer)
            unflushed[direction.index] += buffer.readableBytes
            lane.deliveredBytes += buffer.readableBytes
        } else {
            lane.enqueue(buffer, at: now)
            deliverDue(direction)
        }
        updateReadGates()
    }

    func readComplete(from side: Side) {
        let direction = Self.direction(from: side)
        let count = unflushed[direction.index]
        guard count > 0 else { return }
        unflushed[direction.index] = 0
        destination(direction)?.flush()
        log(.bytes(direction, count: count))
    }

    func writabilityChanged(of side: Side) {
        updateReadGates()
    }

    func inputClosed(on side: Side) {
        lastActivity = now
        if phase == .finished { return }
        if discarding {
            leg(side)?.close()
            return
        }
        if stale != nil {
            // The path is dead: nothing reaches the other side. Tidy up this leg only.
            leg(side)?.close()
            if side == .client { upstream?.shutdownOutput() }
            return
        }
        if ending == nil { ending = (side, .fin) }
        tapEnded(side, .fin, fromPeer: true)
        let direction = Self.direction(from: side)
        if let http { http.ended(direction) }
        if side == .client, upstream == nil, standInRequests != nil, !connectInFlight {
            // No upstream while the relay stands in (outage, portal): it is the server, and
            // closes too.
            down.enqueue(.closeConnection(fault: activeStandIn?.faultName ?? "outage", detail: "the client closed its side; the relay, standing in for the server, closes too"), at: now)
            deliverDue(.down)
            return
        }
        shaped(direction).enqueue(.fin, at: now, holdFor: closeDelay)
        deliverDue(direction)
    }

    func failed(_ side: Side, error: Error) {
        // Any socket error (ECONNRESET, EPIPE, ETIMEDOUT, ...) ends this leg abruptly: forward it
        // as a reset. Channel-state errors (writing after close) say nothing about the peer.
        guard error is IOError else { return }
        peerReset(side)
    }

    /// The peer on `side` reset the connection (or it died): forward a reset after the bytes
    /// already on their way, and drop what was travelling towards the dead side.
    private func peerReset(_ side: Side) {
        guard phase != .finished, resetSides.insert(side).inserted else { return }
        // A reset after the same side's FIN is how the connection ended for the client.
        if ending == nil || (ending?.by == side && ending?.how == .fin) { ending = (side, .rst) }
        tapEnded(side, .rst, fromPeer: true)
        let towardsDeadSide = shaped(Self.direction(from: side).reversed)
        let lost = towardsDeadSide.discardAll()
        if lost > 0 { log(.dropped(towardsDeadSide.direction, count: lost, fault: "peer reset")) }
        if stale != nil || discarding {
            leg(side == .client ? .upstream : .client)?.close()
            return
        }
        let direction = Self.direction(from: side)
        shaped(direction).enqueue(.rst, at: now)
        deliverDue(direction)
    }

    func legInactive(_ side: Side) {
        guard let leg = leg(side), !leg.closedByRelay, !resetSides.contains(side) else { return checkFinished() }
        if !shaped(Self.direction(from: side)).sourceFinished {
            // A clean EOF that NIO turned straight into a full close (our half of this leg was
            // already shut, so no inputClosed event came): it is the peer's FIN.
            inputClosed(on: side)
        } else if !leg.outputClosed {
            // The peer had sent FIN and our half was still open, so no orderly close can end the
            // leg: the socket was reset — typically a peer that closed its socket and answered
            // bytes written to it afterwards with RST (the keep-alive race). Pass it on.
            peerReset(side)
        }
        checkFinished()
    }

    // MARK: Delivery

    /// Writes every queued piece of `direction` that is due, then arms the timer for the next.
    func deliverDue(_ direction: Direction) {
        let lane = shaped(direction)
        guard !isBlackholed, let destination = destination(direction) else { return }
        let now = self.now
        var written = 0
        while let entry = lane.popDue(now: now) {
            switch entry {
            case .data(let buffer, _):
                relay.tap?.sent(id, leg: destination.side, buffer, at: now)
                destination.write(buffer)
                written += buffer.readableBytes
            case .marker(let marker, _):
                flushDelivered(written, direction, to: destination)
                written = 0
                perform(marker, direction: direction, destination: destination)
            }
        }
        flushDelivered(written, direction, to: destination)
        armTimer(for: lane)
        updateReadGates()
    }

    private func flushDelivered(_ count: Int, _ direction: Direction, to destination: LegHandler) {
        guard count > 0 else { return }
        destination.flush()
        shaped(direction).deliveredBytes += count
        log(.bytes(direction, count: count))
    }

    private func perform(_ marker: ShapedDirection.Marker, direction: Direction, destination: LegHandler) {
        switch marker {
        case .fin:
            log(.halfClosed(by: direction == .up ? .client : .upstream))
            destination.shutdownOutput()
        case .rst:
            destination.reset()
        case .closeConnection(let fault, let detail):
            closeGracefully(fault: fault, detail: detail)
        }
    }

    private func armTimer(for lane: ShapedDirection) {
        guard let next = lane.nextReleaseTime, next != Release.neverNanoseconds else { return }
        if lane.timer != nil, lane.timerDeadline <= next { return }
        lane.timer?.cancel()
        lane.timerDeadline = next
        let direction = lane.direction
        lane.timer = eventLoop.scheduleTask(deadline: .uptimeNanoseconds(UInt64(max(0, next)))) { [self] in
            let lane = shaped(direction)
            lane.timer = nil
            lane.timerDeadline = .max
            deliverDue(direction)
        }
    }

    // MARK: Backpressure

    /// A source is read only while its direction holds less than the buffer limit (with
    /// hysteresis down to half) and its destination's socket is taking bytes.
    func updateReadGates() {
        client.setReadsAllowed(readAllowed(from: .client))
        upstream?.setReadsAllowed(readAllowed(from: .upstream))
    }

    /// While the upstream connect is pending the client is read too: its bytes wait in the
    /// (bounded) up queue, and a reset from it is noticed at once.
    private func readAllowed(from side: Side) -> Bool {
        if discarding || stale != nil { return true }
        if side == .client, standInRequests != nil { return !isBlackholed }
        guard !isBlackholed, phase == .relaying || (phase == .connecting && side == .client) else { return false }
        let direction = Self.direction(from: side)
        let lane = shaped(direction)
        let limit = relay.configuration.bufferLimit
        if lane.queuedBytes >= limit {
            paused[direction.index] = true
        } else if lane.queuedBytes <= limit / 2 {
            paused[direction.index] = false
        }
        return !paused[direction.index] && (destination(direction)?.isWritable ?? (phase == .connecting))
    }

    // MARK: End of life

    func checkFinished() {
        guard phase != .finished, !client.isActive else { return }
        if connectInFlight { return }  // its completion closes the new leg and finishes us
        if let upstream, upstream.isActive { return }
        finish()
    }

    private func finish() {
        phase = .finished
        for lane in [up, down] { lane.discardAll() }
        idleTimer?.cancel()
        for timer in timers { timer.cancel() }
        timers.removeAll()
        let (by, how) = ending ?? (.client, .fin)
        log(.closed(by: by, how: how, upBytes: up.deliveredBytes, downBytes: down.deliveredBytes))
        client.pair = nil
        upstream?.pair = nil
        relay.finished(self)
    }
}

extension Direction {
    var index: Int { self == .up ? 0 : 1 }
}

extension ConnectionPair {
    func tapOpened(_ side: Side) {
        guard let tap = relay.tap, let leg = leg(side) else { return }
        tap.legOpened(id, leg: side, local: leg.localAddress, remote: leg.remoteAddress, at: now)
    }

    func tapEnded(_ side: Side, _ how: CloseKind, fromPeer: Bool) {
        relay.tap?.ended(id, leg: side, how, fromPeer: fromPeer, at: now)
    }
}

extension ConnectionPair {
    var stats: ConnectionStats {
        ConnectionStats(
            id: id, deliveredUp: up.deliveredBytes, deliveredDown: down.deliveredBytes,
            queuedUp: up.queuedBytes, queuedDown: down.queuedBytes,
            peakQueued: max(up.peakQueuedBytes, down.peakQueuedBytes))
    }

    /// Applies a new link model to bytes arriving from now on.
    func update(link: LinkConfiguration) {
        up.update(link: link.up, roundTripNanoseconds: link.roundTripNanoseconds)
        down.update(link: link.down, roundTripNanoseconds: link.roundTripNanoseconds)
    }

    /// Closes both legs at once (relay shutdown).
    func closeNow() {
        client.close()
        upstream?.close()
        checkFinished()
    }
}
