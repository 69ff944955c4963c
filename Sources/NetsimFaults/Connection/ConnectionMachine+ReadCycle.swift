import NetsimCore

/// The read cycle: what may bypass the machine, what was written straight through, the flush at
/// the end of a cycle, writability, and the counters the relay reports.
extension ConnectionMachine {
    /// Whether bytes read from `leg` may go straight to the other leg, untouched and unrecorded
    /// by the machine: no fault, no model, nothing queued, the other leg up. The executor asks
    /// after each event and writes such reads itself (the fast path: one check per read),
    /// reporting them with ``deliveredDirectly(from:count:now:)`` at the end of the read cycle —
    /// or, for a cycle it ended itself (flushed and logged), with
    /// ``deliveredAndFlushedDirectly(from:count:lastAt:)`` before the machine's next event.
    public func canBypass(from leg: Leg) -> Bool {
        isPlain && lane(leg.outgoing, { $0.canBypass }) && hasLeg(.destination(leg.outgoing))
    }

    /// The executor wrote `count` bytes read from `leg` straight through during this read cycle.
    public mutating func deliveredDirectly(from leg: Leg, count: Int, now: Int64) {
        self.now = now
        lastActivity = now
        withLeg(leg) { $0.unflushed += count }
        withLane(leg.outgoing) { $0.deliveredBytes += count }
    }

    /// Bytes from `leg` the executor wrote straight through, flushed and logged (``EventKind/bytes(_:count:)``)
    /// itself, in whole read cycles it did not report one by one — the last of them at `lastAt`.
    /// For cycles that only bypassed: told before the machine's next event, they leave it as
    /// ``deliveredDirectly(from:count:now:)`` and ``readComplete(from:)`` per cycle would have
    /// (delivered bytes, last activity), without an action.
    public mutating func deliveredAndFlushedDirectly(from leg: Leg, count: Int, lastAt: Int64) {
        lastActivity = max(lastActivity, lastAt)
        withLane(leg.outgoing) { $0.deliveredBytes += count }
    }

    /// A read cycle on `leg` ended: flush what was written straight through.
    public mutating func readComplete(from leg: Leg) {
        let count = self.leg(leg).unflushed
        guard count > 0 else { return }
        withLeg(leg) { $0.unflushed = 0 }
        let destination = leg.other
        if hasLeg(destination) { actions.append(.flush(destination)) }
        log(.bytes(leg.outgoing, count: count))
    }

    /// The socket of `leg` started or stopped taking bytes.
    public mutating func writabilityChanged(of leg: Leg, writable: Bool) {
        withLeg(leg) { $0.writable = writable }
        updateReadGates()
    }

    // MARK: Observation

    /// Bytes delivered and queued each way.
    public var counters: (deliveredUp: Int, deliveredDown: Int, queuedUp: Int, queuedDown: Int, peakQueued: Int) {
        (up.deliveredBytes, down.deliveredBytes, up.queuedBytes, down.queuedBytes, max(up.peakQueuedBytes, down.peakQueuedBytes))
    }
}
