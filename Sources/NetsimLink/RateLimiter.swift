import NetsimCore

/// The bandwidth stage: a link that serializes bytes one after another at the rate, as a real
/// link does, so a piece is released when its last byte has gone over the wire.
///
/// The link is a FIFO server: a piece that arrives at `a` starts when the link is free,
/// `max(a, busyUntil)`, and is released `bytes × 8 / rate` later, which is also when the link
/// is free again. So in a burst that began at `t0` (the link was idle before it), the piece that
/// ends with the burst's n-th byte is released at exactly `t0 + n × 8 / rate` when the bytes
/// arrive faster than the link drains them, and later when they do not: no byte is ever released
/// before its own serialization ends, the first one included. (A token bucket with a burst
/// allowance, this stage's earlier shape, released the first 1500 bytes at once, which made a
/// 10 KB answer at 64 kbit/s arrive 190 ms early.)
///
/// Integer nanoseconds per byte would drift badly at high rates (10 Gbit/s is 0.8 ns a byte) and
/// integer bytes per tick would at low ones (8 kbit/s is one byte per millisecond), so the clock
/// is a Double measured from the first arrival: exact from 8 kbit/s to well past 10 Gbit/s, and
/// release times are rounded up only on the way out, never fed back.
public struct RateLimiter: Sendable {
    /// Bytes are rated in pieces of about 1 ms worth (64 B…64 KiB) so that a large chunk trickles
    /// out at the link's pace instead of arriving in one lump after its whole transmission time.
    public static func pieceBytes(bytesPerSecond: Double) -> Int {
        let perMillisecond = bytesPerSecond / 1000
        guard perMillisecond.isFinite else { return 65536 }
        return min(65536, max(64, Int(perMillisecond)))
    }

    private var origin: Int64?
    /// Virtual time (ns after `origin`) at which the link has finished serializing every byte it
    /// was given: it is idle from then on.
    private var busyUntil = -Double.infinity

    public init() {}

    /// When `bytes` that arrived at `arrival` have been serialized at `bytesPerSecond` behind
    /// everything given before them: `max(arrival, busyUntil) + bytes / rate`, rounded up to a
    /// whole nanosecond. The link is then busy until that time.
    ///
    /// The rate may differ from one call to the next (a scenario step): bytes given before keep
    /// the times they were given, as they were serialized at the old rate, and the new rate
    /// applies from the first byte given after the change.
    public mutating func release(bytes: Int, arrivedAt arrival: Int64, bytesPerSecond: Double) -> Int64 {
        let origin = self.origin ?? arrival
        self.origin = origin
        let arrivalOffset = Double(arrival.subtractingSaturating(origin))
        // Within a nanosecond of the link freeing up is back to back: release times are rounded
        // up to whole nanoseconds, and the shaper's in-order clamp hands that rounding back as
        // the next piece's arrival. Starting there would add up to 1 ns a piece (3.8 µs a second
        // at 10 Gbit/s).
        let start = arrivalOffset - busyUntil < 1 ? busyUntil : arrivalOffset
        busyUntil = start + Double(bytes) * 1e9 / bytesPerSecond
        return origin.addingSaturating(LossRecovery.wholeNanoseconds(busyUntil))
    }

    /// The link carried nothing for `duration` from `start`: if it was still serializing then,
    /// it finishes that much later.
    public mutating func wasDown(from start: Int64, for duration: Int64) {
        guard let origin, duration > 0 else { return }
        if busyUntil > Double(start.subtractingSaturating(origin)) { busyUntil += Double(duration) }
    }

    /// The link is busy until `time` (the caller moved its queue to a new rate).
    public mutating func busy(until time: Int64) {
        let origin = self.origin ?? time
        self.origin = origin
        busyUntil = Double(time.subtractingSaturating(origin))
    }
}
