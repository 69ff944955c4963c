import DequeModule
import NetsimLink

/// The bottleneck driven by a ``DeliveryTrace`` (Mahimahi's mm-link): packets wait in a
/// drop-tail buffer and leave at the trace's delivery opportunities (``TraceRateLimiter``, the
/// relay's trace stage too): each carries up to 1500 bytes, a packet larger than what is left of
/// an opportunity continues in the next one and is delivered with its last byte, an opportunity
/// nobody is waiting for is lost. The trace starts at the first packet. Pure: the caller passes
/// the time.
public struct TraceQueue: Sendable {
    public let trace: DeliveryTrace
    public let limit: QueueLimit

    private var limiter: TraceRateLimiter?
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
        var limiter = self.limiter ?? TraceRateLimiter(trace: trace, epoch: arrival)
        while let first = inQueue.first, first.departure <= arrival {
            inQueue.removeFirst()
            queuedBytes -= first.size
        }
        guard limit.admits(size: size, queuedPackets: inQueue.count, queuedBytes: queuedBytes) else { return nil }
        var departure = arrival
        limiter.release(bytes: size, readyAt: arrival) { _, time in departure = time }
        self.limiter = limiter
        inQueue.append((departure, size))
        queuedBytes += size
        return departure
    }
}
