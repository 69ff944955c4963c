import NetsimCore

/// The bandwidth stage: a token bucket kept as GCRA's virtual clock ("when would the bucket be
/// full again?") in Double nanoseconds.
///
/// Integer nanoseconds per byte would drift badly at high rates (10 Gbit/s is 0.8 ns a byte) and
/// integer bytes per tick would at low ones (8 kbit/s is one byte per millisecond), so the clock
/// is a Double measured from the first arrival: exact from 8 kbit/s to well past 10 Gbit/s, and
/// release times are rounded only on the way out, never fed back.
public struct RateLimiter: Sendable {
    /// Bytes that may go out back to back after an idle period: a full-size packet, or 1 ms worth
    /// at high rates, "a small burst" like a NIC's.
    public static func burstBytes(bytesPerSecond: Double) -> Double {
        max(1500, bytesPerSecond / 1000)
    }

    /// Bytes are rated in pieces of about 1 ms worth (64 B…64 KiB) so that a large chunk trickles
    /// out at the link's pace instead of arriving in one lump after its whole transmission time.
    public static func pieceBytes(bytesPerSecond: Double) -> Int {
        let perMillisecond = bytesPerSecond / 1000
        guard perMillisecond.isFinite else { return 65536 }
        return min(65536, max(64, Int(perMillisecond)))
    }

    private var origin: Int64?
    /// Virtual time (ns after `origin`) at which the bucket would be full again.
    private var fullAt = -Double.infinity
    /// The rate `fullAt` was computed at.
    private var clockRate: Double?

    public init() {}

    /// The earliest time at or after `arrival` at which `bytes` (at most one burst) may leave at
    /// `bytesPerSecond`, and charges the bucket for them.
    ///
    /// Sending n bytes needs n tokens; the bucket holds at most one burst and refills at the rate.
    /// With the bucket's deficit expressed as "full again at F", n bytes may go once
    /// F + (n − burst)·T ≤ t, where T is nanoseconds per byte; afterwards F grows by n·T.
    public mutating func release(bytes: Int, arrivedAt arrival: Int64, bytesPerSecond: Double) -> Int64 {
        let origin = self.origin ?? arrival
        self.origin = origin
        let nanosecondsPerByte = 1e9 / bytesPerSecond
        let burst = Self.burstBytes(bytesPerSecond: bytesPerSecond)
        let cost = Double(bytes) * nanosecondsPerByte
        let arrivalOffset = Double(arrival.subtractingSaturating(origin))
        if let clockRate, clockRate != bytesPerSecond, fullAt > arrivalOffset {
            // The rate changed: keep the deficit in bytes, not in time, so a change grants no
            // fresh burst and does not stretch an old debt. Converted at this arrival, as the
            // limiter is not told when the change happened.
            fullAt = arrivalOffset + (fullAt - arrivalOffset) * clockRate / bytesPerSecond
        }
        clockRate = bytesPerSecond
        let allowed = fullAt + cost - burst * nanosecondsPerByte
        let release = max(arrivalOffset, allowed)
        fullAt = max(fullAt, release) + cost
        if release == arrivalOffset { return arrival }
        return origin.addingSaturating(LossRecovery.wholeNanoseconds(release))
    }
}
