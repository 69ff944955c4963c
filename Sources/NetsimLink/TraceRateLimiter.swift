import NetsimCore

/// The bandwidth stage driven by a recorded link (a ``DeliveryTrace``, Mahimahi's mm-link): bytes
/// leave only at the trace's delivery opportunities, each carrying up to 1500 bytes, so the rate
/// varies over time as the recorded cellular link's did. A piece larger than what is left of an
/// opportunity continues in the next ones and is released with its last byte's; an opportunity
/// nobody had bytes for is lost, not saved up (as in mm-link).
///
/// The trace's time runs from an epoch the caller gives — the relay's start, so every
/// connection meets the same moment of the recording at the same time, as clients sharing one
/// cellular link do (each connection still gets the whole capacity: the relay shapes connections
/// independently, as its `bandwidth` does). Pure: the caller passes the time.
public struct TraceRateLimiter: Sendable {
    public let trace: DeliveryTrace
    public let epoch: Int64
    /// The next opportunity not used yet (counting across repetitions of the trace).
    private var nextOpportunity = 0
    /// Bytes left in the last opportunity used, and its time (ns after `epoch`).
    private var leftover = 0
    private var leftoverTime: Int64 = 0

    public init(trace: DeliveryTrace, epoch: Int64) {
        self.trace = trace
        self.epoch = epoch
    }

    /// Releases `bytes` that are ready at `ready` (ns, the caller's clock): calls `emit(bytes,
    /// time)` for each opportunity's share, in order, times not decreasing, never before `ready`.
    public mutating func release(bytes: Int, readyAt ready: Int64, emit: (Int, Int64) -> Void) {
        let now = max(0, ready.subtractingSaturating(epoch))
        var remaining = bytes
        // What is left of the last opportunity, if it has not passed yet.
        if leftover > 0, leftoverTime >= now {
            let used = min(leftover, remaining)
            remaining -= used
            leftover -= used
            emit(used, epoch.addingSaturating(leftoverTime))
        }
        guard remaining > 0 else { return }
        nextOpportunity = max(nextOpportunity, trace.firstOpportunity(atOrAfter: now))
        while remaining > 0 {
            let time = trace.time(ofOpportunity: nextOpportunity)
            nextOpportunity += 1
            let used = min(DeliveryTrace.opportunityBytes, remaining)
            remaining -= used
            leftover = DeliveryTrace.opportunityBytes - used
            leftoverTime = time
            emit(used, epoch.addingSaturating(time))
        }
    }
}
