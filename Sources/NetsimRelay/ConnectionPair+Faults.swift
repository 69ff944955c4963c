import NIOCore
import NetsimCore
import NetsimLink

extension ConnectionPair {
    /// Applies a fault to this connection now. `atAccept` is true while the connection is being
    /// set up, when accept-time faults (refuse, slow-connect) still mean something.
    func apply(_ kind: FaultKind, id: FaultID, atAccept: Bool) {
        // A rule acts on a connection once, whichever path delivered it.
        guard phase != .finished, appliedFaults.insert(id).inserted else { return }
        switch kind {
        case .refuse, .reject:
            guard atAccept else { return }
            fired(kind, kind == .reject
                ? "reset at accept, as a firewall's REJECT or a load balancer with no backend does"
                : "reset at accept: a userspace relay cannot refuse one SYN and accept the next; the listener closes only at 100%")
            if ending == nil { ending = (.relay, .rst) }
            phase = .relaying
            client.reset()
        case .slowConnect(let delay):
            guard atAccept else { return }
            fired(kind, "upstream connect delayed by \(delay.compactDescription)")
            connectDelay += delay.nanoseconds
        case .blackhole:
            fired(kind, "nothing is forwarded either way until the fault lifts")
            persistentFaults[id] = kind
            updateReadGates()
        case .fin:
            closeGracefully(fault: kind.name, detail: "graceful close of both legs")
        case .rst:
            fired(kind, "reset both legs")
            if ending == nil { ending = (.relay, .rst) }
            dropQueued(fault: kind.name)
            client.reset()
            upstream?.reset()
        case .stale(let mode):
            fired(kind, "looks alive; the client's next bytes are swallowed and answered with \(mode.rawValue.uppercased())")
            stale = mode
            dropQueued(fault: kind.name)
            updateReadGates()
        case .idleClose(let limit):
            fired(kind, "closes after \(limit.compactDescription) of silence")
            persistentFaults[id] = kind
            armIdleTimer()
        case .limit(let bytes):
            fired(kind, "closes after \(bytes) more bytes downstream")
            persistentFaults[id] = kind
            downLimitRemaining = bytes
        case .slowClose(let delay):
            fired(kind, "each FIN is held back \(delay.compactDescription)")
            persistentFaults[id] = kind
        case .outage(let outage):
            fired(kind, (atAccept ? "no upstream connect; " : "")
                + "the relay answers requests itself (\(outage.rawValue)) until the fault lifts")
            persistentFaults[id] = kind
            startStandIn()
        case .portal(let settings):
            fired(kind, (atAccept ? "no upstream connect; " : "")
                + "a captive portal answers plain HTTP with \(settings.answer == .redirect ? "a redirect to its login page" : "its login page") and breaks TLS (\(settings.tls.rawValue)) until a login")
            persistentFaults[id] = kind
            startStandIn()
        }
    }

    /// The fault stops acting on this connection. A stale connection stays dead, as a real
    /// one whose NAT mapping is gone does.
    func lift(_ id: FaultID) {
        guard phase != .finished, let kind = persistentFaults.removeValue(forKey: id) else { return }
        log(.faultLifted(fault: kind.name))
        switch kind {
        case .blackhole:
            if connectHeldByBlackhole, !isBlackholed {
                connectHeldByBlackhole = false
                connectUpstream()
            }
            updateReadGates()
            for direction in Direction.allCases { deliverDue(direction) }
        case .idleClose:
            armIdleTimer()
        case .limit:
            downLimitRemaining = nil
        case .outage, .portal:
            endStandIn()
        default:
            break
        }
    }

    private func fired(_ kind: FaultKind, _ detail: String) {
        log(.faultFired(fault: kind.name, detail: detail))
    }

    private func dropQueued(fault: String) {
        for lane in [up, down] {
            let lost = lane.discardAll()
            if lost > 0 { log(.dropped(lane.direction, count: lost, fault: fault)) }
        }
    }

    /// Closes both legs with FIN now; bytes still in flight are dropped (and logged). The legs are
    /// then read and discarded until the peers close, so close(2) never finds unread bytes and
    /// turns the FIN into a reset.
    func closeGracefully(fault: String, detail: String) {
        guard phase != .finished, !discarding else { return }
        log(.faultFired(fault: fault, detail: detail))
        if ending == nil { ending = (.relay, .fin) }
        dropQueued(fault: fault)
        discarding = true
        client.shutdownOutput()
        upstream?.shutdownOutput()
        updateReadGates()
        schedule(after: ConnectionPair.closeGrace) { pair in
            pair.client.close()
            pair.upstream?.close()
        }
        checkFinished()
    }

    /// How long a leg closed by a fault may stay half-open before the relay closes it fully.
    static let closeGrace: Int64 = 10_000_000_000

    /// Closes the client leg the way a fault says (a stale connection written to, a portal
    /// breaking TLS); the upstream leg gets a plain FIN. Later bytes are read and discarded.
    func endClientLeg(_ mode: CloseKind, fault: String, detail: String) {
        guard !discarding else { return }
        log(.faultFired(fault: fault, detail: detail))
        if ending == nil { ending = (.relay, mode) }
        discarding = true
        if mode == .rst {
            client.reset()
        } else {
            client.shutdownOutput()
        }
        upstream?.shutdownOutput()
        schedule(after: ConnectionPair.closeGrace) { pair in
            pair.client.close()
            pair.upstream?.close()
        }
    }

    /// How long a FIN waits before it is forwarded (the longest active slow-close).
    var closeDelay: Int64 {
        persistentFaults.values.compactMap { kind -> Int64? in
            if case .slowClose(let d) = kind { return d.nanoseconds }
            return nil
        }.max() ?? 0
    }

    private var idleLimit: Int64? {
        persistentFaults.values.compactMap { kind -> Int64? in
            if case .idleClose(let d) = kind { return d.nanoseconds }
            return nil
        }.min()
    }

    func armIdleTimer() {
        idleTimer?.cancel()
        idleTimer = nil
        guard let limit = idleLimit else { return }
        let deadline = lastActivity + limit
        idleTimer = eventLoop.scheduleTask(deadline: .uptimeNanoseconds(UInt64(max(0, deadline)))) { [self] in
            idleTimer = nil
            guard phase != .finished, let limit = idleLimit else { return }
            if now - lastActivity >= limit {
                closeGracefully(fault: "idle-close", detail: "silent for \(formatNanoseconds(now - lastActivity))")
            } else {
                armIdleTimer()
            }
        }
    }
}
