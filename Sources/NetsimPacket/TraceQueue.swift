import DequeModule

/// The bottleneck driven by a ``DeliveryTrace`` (Mahimahi's mm-link): packets wait in a
/// drop-tail buffer and leave at the trace's delivery opportunities, each of which carries up to
/// 1500 bytes. A packet larger than what is left of an opportunity continues in the next one and
/// is delivered with its last byte; an opportunity nobody is waiting for is lost, not saved up.
/// The trace starts at the first packet. Pure: the caller passes the time.
public struct TraceQueue: Sendable {
    public let trace: DeliveryTrace
    public let limit: QueueLimit

    private var origin: Int64?
    /// The next opportunity not used yet (counting across repetitions).
    private var nextOpportunity = 0
    /// Bytes left in the last opportunity used, and its time (ns after `origin`).
    private var leftover = 0
    private var leftoverTime: Int64 = 0
    /// Accepted packets not delivered yet, oldest first.
    private var inQueue = Deque<(departure: Int64, size: Int)>()
    private var queuedBytes = 0

    public init(trace: DeliveryTrace, limit: QueueLimit) {
        self.trace = trace
        self.limit = limit
    }

    public var backlog: (packets: Int, bytes: Int) { (inQueue.count, queuedBytes) }

    /// When a packet of `size` bytes arriving at `arrival` is delivered, or nil when the buffer
    /// is full and it is dropped.
    public mutating func enqueue(size: Int, at arrival: Int64) -> Int64? {
        let origin = self.origin ?? arrival
        self.origin = origin
        let now = arrival - origin
        while let first = inQueue.first, first.departure <= now {
            inQueue.removeFirst()
            queuedBytes -= first.size
        }
        guard limit.admits(size: size, queuedPackets: inQueue.count, queuedBytes: queuedBytes) else { return nil }
        var remaining = size
        var departure = now
        // What is left of the last opportunity, if it has not passed yet.
        if leftover > 0, leftoverTime >= now {
            let used = min(leftover, remaining)
            remaining -= used
            leftover -= used
            departure = leftoverTime
        }
        if remaining > 0 {
            nextOpportunity = max(nextOpportunity, trace.firstOpportunity(atOrAfter: now))
            while remaining > 0 {
                departure = trace.time(ofOpportunity: nextOpportunity)
                nextOpportunity += 1
                let used = min(DeliveryTrace.opportunityBytes, remaining)
                remaining -= used
                leftover = DeliveryTrace.opportunityBytes - used
                leftoverTime = departure
            }
        }
        inQueue.append((departure, size))
        queuedBytes += size
        return origin + departure
    }
}
