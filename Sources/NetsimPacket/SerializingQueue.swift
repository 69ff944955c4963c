import DequeModule
import NetsimLink

/// The bottleneck: packets leave one after another at the link's rate, from a buffer of bounded
/// size that drops what arrives when it is full (drop-tail).
///
/// A packet's departure is when its last bit has gone out: max(arrival, previous departure) +
/// size·8/rate. Time is kept as Double nanoseconds from the first arrival (as ``RateLimiter``
/// does) so that the rate stays exact at any clock value and at rates from kbit/s to Gbit/s; it is
/// rounded only on the way out. Pure: the caller passes the time.
public struct SerializingQueue: Sendable {
    public let bytesPerSecond: Double
    public let limit: QueueLimit

    private var origin: Int64?
    /// When the link finishes the last accepted packet, ns after `origin`.
    private var busyUntil = -Double.infinity
    /// Accepted packets whose last bit has not left yet (the one being sent included), oldest first.
    private var inQueue = Deque<(departure: Double, size: Int)>()
    private var queuedBytes = 0

    public init(bytesPerSecond: Double, limit: QueueLimit) {
        self.bytesPerSecond = bytesPerSecond
        self.limit = limit
    }

    /// Packets and bytes waiting or being sent at the last arrival.
    public var backlog: (packets: Int, bytes: Int) { (inQueue.count, queuedBytes) }

    /// The departure time of a packet of `size` bytes arriving at `arrival`, or nil when the
    /// buffer is full and it is dropped. The packet being sent counts against the limit, as in a
    /// modem's buffer.
    public mutating func enqueue(size: Int, at arrival: Int64) -> Int64? {
        let origin = self.origin ?? arrival
        self.origin = origin
        let now = Double(arrival - origin)
        while let first = inQueue.first, first.departure <= now {
            inQueue.removeFirst()
            queuedBytes -= first.size
        }
        guard limit.admits(size: size, queuedPackets: inQueue.count, queuedBytes: queuedBytes) else { return nil }
        guard bytesPerSecond > 0, bytesPerSecond.isFinite else {
            // Zero rate: nothing ever leaves (the queue fills, then drops). Infinite: no queue.
            if bytesPerSecond.isInfinite { return arrival }
            inQueue.append((.infinity, size))
            queuedBytes += size
            return Int64.max
        }
        let departure = max(now, busyUntil) + Double(size) * 1e9 / bytesPerSecond
        busyUntil = departure
        inQueue.append((departure, size))
        queuedBytes += size
        return origin + Int64(departure.rounded(.up))
    }
}
