import NIOCore
import NetsimCore
import NetsimFaults

/// The real refusal (`refuse` at 100%): the listener closes, the port is held, the listener comes
/// back when the last refusing rule lifts — and every such change to the listener happens one at
/// a time.
extension Relay {

    /// Runs `change` after every listener change asked for before it has finished, and waits for
    /// it.
    ///
    /// Why: closing and binding a listener are asynchronous. Without an order, a lift arriving
    /// while its refusal is still closing the listener binds beside the socket being closed
    /// (`EADDRINUSE`) or leaves a refusal in force with the listener open; a `stop()` during a
    /// lift's bind leaves a listener behind a stopped relay; a hold made after `stop()` keeps the
    /// port forever. In order, each change sees the state the one before it left.
    func changeListener(_ change: @escaping @Sendable () async -> Void) async {
        let task = lock.withLock { () -> Task<Void, Never> in
            let previous = listenerChanges
            let task = Task {
                await previous?.value
                await change()
            }
            listenerChanges = task
            return task
        }
        await task.value
    }

    /// Whether a configured `refuse` at 100% is in force from the start: the relay then never
    /// listens until it lifts. It listened first, for a moment, and logged `listening` before
    /// the refusal closed it (QA 44): a client quick enough was accepted.
    var refusesFromTheStart: Bool {
        configuration.faults.contains { rule in
            guard rule.kind.fault is Refuse, rule.probability.fraction >= 1 else { return false }
            switch rule.trigger {
            case .immediately: return true
            case .at(let at): return at <= .zero
            case .after: return false
            }
        }
    }

    /// Takes the listen address without listening (``PortHold``): where the relay will listen
    /// once a refusal in force from the start lifts. Returns the address, with the real port.
    func holdPort(_ endpoint: Endpoint) async throws -> Endpoint {
        let hold = try PortHold.strongest(SocketAddress.makeAddressResolvingHost(endpoint.host, port: endpoint.port))
        let bound = Endpoint(host: endpoint.host, port: hold.port ?? endpoint.port)
        lock.withLock {
            portHold = hold
            boundEndpoint = bound
        }
        return bound
    }

    /// A real refusal: with the listener closed the kernel answers SYNs with RST. The port stays
    /// taken meanwhile (``PortHold``), so no other server can be handed it and the listener can
    /// come back on it. Nothing happens if the rule was removed before its turn came.
    func startRefusing(_ id: FaultID) async {
        await changeListener { [self] in
            let (channel, held) = lock.withLock { () -> ((any Channel)?, Endpoint?) in
                guard !listenerStopped, rules[id] != nil else { return (nil, nil) }
                refusingRules.insert(id)
                guard refusingRules.count == 1 else { return (nil, nil) }
                defer { listener = nil }
                return (listener, portHold == nil ? nil : boundEndpoint)
            }
            guard let channel else {
                // In force from the start: the port is held, nothing ever listened. Said so, for
                // a log with no `listening` before this close (QA 55).
                if let held {
                    eventLog.record(.listenerClosed(reason: "refuse: new connections are refused; not listening on \(held) until the refusal lifts (the port is held)"))
                }
                return
            }
            let address = channel.localAddress
            try? await channel.close()
            var reason = "refuse: new connections are refused"
            if let address {
                do {
                    let hold = try await PortHold.taking(address)
                    lock.withLock { portHold = hold }
                } catch {
                    reason += "; the port could not be kept meanwhile (\(error))"
                }
            }
            eventLog.record(.listenerClosed(reason: reason))
        }
    }

    /// Lifts `id`'s refusal: when no refusing rule is left, the held socket becomes the listener
    /// (so the port is never free between: a connect's ephemeral port once took it there, QA 50),
    /// or, when no hold could be taken, the listener binds again on its old address. A listener
    /// that cannot come back (another program listens on the port) is said on standard error as
    /// well as in the log: the relay accepts nothing from then on.
    func stopRefusing(_ id: FaultID) async {
        await changeListener { [self] in
            let reopen = lock.withLock { refusingRules.remove(id) != nil && refusingRules.isEmpty && !listenerStopped }
            guard reopen, let endpoint = endpoint else { return }
            defer { releasePortHold() }  // a hold that could not listen
            do {
                if let hold = lock.withLock({ portHold }) {
                    _ = try await bind(endpoint, onto: hold)
                } else {
                    _ = try await PortHold.whileInUse { try await bind(endpoint) }
                }
            } catch {
                let reason = "could not listen again on \(endpoint): \(SocketFailureText.describe(error)); the relay accepts no connection from now on"
                eventLog.record(.listenerClosed(reason: reason))
                logger.error("\(reason)")
            }
        }
    }

    /// Closes the listener for good (``stop()``), after any refusal or lift under way, and frees
    /// the port a refusal kept.
    func closeListenerForGood() async {
        await changeListener { [self] in
            let channel = lock.withLock {
                defer { listener = nil }
                listenerStopped = true
                return listener
            }
            try? await channel?.close()
            releasePortHold()
        }
    }

    /// Frees the port a refusal kept, if any (once the listener is back, or the relay stops).
    private func releasePortHold() {
        lock.withLock { () -> PortHold? in
            defer { portHold = nil }
            return portHold
        }?.release()
    }
}
