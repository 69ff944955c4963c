import NetsimCore
import NetsimLink

extension ConnectionMachine {
    /// Decides the upstream connect: at once, after the delays faults and the SYN-loss model ask
    /// for, never (a stand-in answers instead), or held until a fault lifts.
    mutating func beginConnect(now: Int64) {
        guard phase == .accepted else { return }
        if standIn != nil {
            // The relay answers every request itself (outage, portal): no upstream connect until it lifts.
            phase = .relaying
            recomputePlain()
            updateReadGates()
            return
        }
        phase = .connecting
        upstream = .waiting
        var synRandom = random.derived(SeededRandom.label("syn"))
        switch ConnectModel.outcome(link: link, random: &synRandom) {
        case .connect(let afterNanoseconds):
            if afterNanoseconds > 0 {
                log(.faultFired(fault: .synLoss, detail: "lost SYNs delay the upstream connect by \(formatNanoseconds(afterNanoseconds))"))
            }
            let delay = connectDelay + afterNanoseconds
            // A slow or retried connect delays the handshake: the client sends later by as much
            // (the two overlapped, and slow-connect=1s under a 1 s round trip changed nothing).
            clientMaySend = clientMaySend.addingSaturating(delay)
            serverMaySend = serverMaySend.addingSaturating(delay)
            if delay > 0 {
                actions.append(.arm(.connect, at: now + delay))
            } else {
                connectUpstream()
            }
            updateReadGates()
        case .timeout(let afterNanoseconds):
            log(.faultFired(fault: .synLoss, detail: "every SYN lost; the connect times out after \(formatNanoseconds(afterNanoseconds))"))
            actions.append(.arm(.connectTimeout, at: now + afterNanoseconds))
        }
    }

    /// When bytes read at `readAt` leave their sender over the simulated link: not before the
    /// handshake would have let that side send (``clientMaySend``, ``serverMaySend``).
    func sendTime(_ direction: Direction, _ readAt: Int64) -> Int64 {
        max(readAt, direction == .up ? clientMaySend : serverMaySend)
    }

    /// Starts the connect unless a fault holds it (it starts when that fault lifts).
    mutating func connectUpstream() {
        guard phase == .connecting, upstream == .waiting else { return }
        if holdsConnect {
            upstream = .held  // connects when the fault lifts
            return
        }
        upstream = .inFlight
        actions.append(.connectUpstream)
    }

    /// The client ended the connection with a reset: an upstream connect that completes after it
    /// is reset too, as the server would have been (QA 37: it saw a clean EOF).
    public var clientReset: Bool { ending?.by == .client && ending?.how == .rst }

    /// The upstream connect succeeded. Returns false when the connection no longer wants it (the
    /// client left, or a fault closed it meanwhile): the executor closes the new channel (with a
    /// reset after the client's, ``clientReset``).
    public mutating func upstreamConnected(after: Int64, upstreamName: String, now: Int64) -> Bool {
        self.now = now
        assert(upstream == .inFlight, "a connect completed that was not asked for (upstream \(upstream))")
        guard phase == .connecting, upstream == .inFlight, client.active, !discarding else {
            upstream = .none
            checkFinished()
            return false
        }
        upstream = .connected
        server = LegState()
        server.active = true
        phase = .relaying
        recomputePlain()
        log(.upstreamConnected(upstream: upstreamName, after: after))
        updateReadGates()
        for direction in Direction.allCases { deliverDue(direction, now: now) }
        return true
    }

    /// Shows the client the same kind of failure the relay met: a refused or unreachable upstream
    /// resets the client (the closest an accepted connection can come to a refusal), a timeout
    /// leaves it in silence until it gives up.
    public mutating func upstreamFailed(_ reason: UpstreamFailure, detail: String) {
        if upstream != .connected { upstream = .failed }
        guard phase == .connecting, client.active else {
            checkFinished()
            return
        }
        phase = .relaying
        log(.upstreamFailed(reason: reason, detail: detail))
        switch reason {
        case .timeout:
            discarding = true
            recomputePlain()
            updateReadGates()
        case .refused, .unreachable, .other:
            if ending == nil { ending = (.upstream, .rst) }
            resetLeg(.client)
        }
        recomputePlain()
        checkFinished()
    }
}
