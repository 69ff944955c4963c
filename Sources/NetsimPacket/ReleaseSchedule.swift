import HeapModule

/// Packets waiting for their release time, earliest first; equal times leave in the order they
/// were scheduled. A heap, not a queue: a reordered packet (or a duplicate) may be due before
/// packets scheduled earlier.
public struct ReleaseSchedule<Payload> {
    private struct Entry: Comparable {
        var time: Int64
        var sequence: UInt64
        var payload: Payload
        static func < (a: Entry, b: Entry) -> Bool { (a.time, a.sequence) < (b.time, b.sequence) }
        static func == (a: Entry, b: Entry) -> Bool { a.time == b.time && a.sequence == b.sequence }
    }

    private var heap = Heap<Entry>()
    private var sequence: UInt64 = 0

    public init() {}

    public var count: Int { heap.count }

    /// When the next packet is due; nil when none waits.
    public var nextTime: Int64? { heap.min?.time }

    public mutating func schedule(_ payload: Payload, at time: Int64) {
        heap.insert(Entry(time: time, sequence: sequence, payload: payload))
        sequence &+= 1
    }

    /// The next packet if it is due at `now`.
    public mutating func popDue(now: Int64) -> Payload? {
        guard let first = heap.min, first.time <= now else { return nil }
        return heap.removeMin().payload
    }
}
