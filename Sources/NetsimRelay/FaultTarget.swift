import NIOCore
import NetsimCore
import NetsimFaults

/// What the relay's fault rules act on: a connection's ``ConnectionPair``, or the HTTP/2 layer
/// of an intercepted connection (``HTTP2Layer``). Every method runs on ``eventLoop``.
protocol FaultTarget: AnyObject, Sendable {
    var id: ConnectionID { get }
    var layer: ConnectionLayer { get }
    var eventLoop: any EventLoop { get }
    /// Event-loop time, in nanoseconds.
    var now: Int64 { get }
    /// Applies a fault (the target ignores those its layer does not take).
    func apply(_ kind: FaultKind, id: FaultID, atAccept: Bool)
    func lift(_ fault: FaultID)
    /// Closes the connection now (relay shutdown).
    func closeNow()
    /// Runs `body` at `deadline` (event-loop time) unless the target finished first.
    func schedule(at deadline: Int64, _ body: @escaping @Sendable (any FaultTarget) -> Void)
}

extension Relay {
    /// Registers a target that has started and returns the faults to apply to it now and the
    /// per-connection (`after`) ones to schedule, by the same rules for every layer.
    func register(_ target: any FaultTarget) -> (immediate: [(FaultID, FaultKind)], delayed: [(FaultID, Int64)]) {
        var full = false
        defer { if full { updateAccepting() } }
        return lock.withLock {
            if target.layer == .http {
                httpLayers[target.id] = target
            } else if let pair = target as? ConnectionPair {
                pairs[target.id] = pair
                // One the listener accepted was counted then (``Relay/accepted(_:by:)``).
                let counted = pair.client.channel.map { acceptLimit.waiting.remove(ObjectIdentifier($0)) != nil } ?? false
                if !counted { full = crossedConnectionLimit(registered: true) }
            }
            var immediate: [(FaultID, FaultKind)] = []
            var delayed: [(FaultID, Int64)] = []
            for (id, state) in rules.sorted(by: { $0.key.raw < $1.key.raw }) where state.rule.target != .existing {
                guard target.layer.takes(state.rule.kind, atAccept: true), affects(id, target.id, state.rule.probability) else { continue }
                if case .after(let d) = state.rule.trigger {
                    delayed.append((id, d.nanoseconds))
                } else if state.activatedAt != nil {
                    immediate.append((id, state.rule.kind))
                }
            }
            return (immediate, delayed)
        }
    }

    /// A target has ended: forget it (resume the listener if it was at the connection limit, and
    /// ``connectionsClosed(within:)`` once none is left).
    func finished(_ target: any FaultTarget) {
        logger.trace("connection finished", metadata: ["connection": "\(target.id)", "layer": "\(target.layer)"])
        var roomAgain = false
        let waiters = lock.withLock { () -> [EventLoopPromise<Void>] in
            if target.layer == .http {
                if httpLayers[target.id] === target { httpLayers.removeValue(forKey: target.id) }
            } else if pairs.removeValue(forKey: target.id) != nil {
                roomAgain = crossedConnectionLimit(registered: false)
            }
            guard pairs.isEmpty, httpLayers.isEmpty else { return [] }
            defer { closedWaiters = [:] }
            return Array(closedWaiters.values)
        }
        // After the target's `closed` is logged (its loop logs it once this returns): the
        // listener_resumed and the next connection's `opened` come after it in the log, which
        // showed one connection over the limit (QA 39), and whoever waited for no connection
        // finds every `closed`.
        guard roomAgain || !waiters.isEmpty else { return }
        target.eventLoop.execute { [self] in
            if roomAgain { updateAccepting() }
            for waiter in waiters { waiter.succeed(()) }
        }
    }

    /// A per-connection (`after`) fault: applied to `target` at `deadline`, and lifted from it
    /// alone the rule's `lasts` later (`--fault-for`: "lifts the fault D after it fires").
    /// Before, the lift removed the whole rule D after it was added, so it was cut short on the
    /// first connections and never reached later ones.
    func scheduleDelayedFault(_ id: FaultID, on target: any FaultTarget, at deadline: Int64) {
        target.schedule(at: deadline) { [self] target in
            guard let rule = lock.withLock({ rules[id]?.rule }) else { return }
            target.apply(rule.kind, id: id, atAccept: false)
            if let lasts = rule.lasts {
                target.schedule(at: deadline + lasts.nanoseconds) { target in target.lift(id) }
            }
        }
    }
}

extension Relay {
    /// The wire layer of intercepted connection `id`, which logs its `opened` and `closed`. Its
    /// HTTP layer may call it directly: ``InterceptConnector`` joins both on one event loop.
    func wireLayer(of id: ConnectionID) -> ConnectionPair? {
        lock.withLock { pairs[id] }.flatMap { $0.layer == .wire ? $0 : nil }
    }
}
