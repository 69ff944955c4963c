/// One piece of bytes and the monotonic time (ns) at which the relay must write it to the far side.
///
/// The shapers never hold bytes themselves: they only say *when* each piece may go, so the relay
/// keeps ownership of the buffers and the models stay pure.
public struct Release: Equatable, Sendable {
    /// How many bytes of the stream, in order, this piece covers.
    public var bytes: Int
    /// Monotonic time in nanoseconds, or ``neverNanoseconds``.
    public var at: Int64

    public init(bytes: Int, at: Int64) {
        self.bytes = bytes
        self.at = at
    }
}

extension Release {
    /// The release time of bytes that will never be delivered (the simulated TCP gave up).
    /// `Int64.max` so that it sorts after every real time and "never" needs no special case in
    /// comparisons.
    public static let neverNanoseconds: Int64 = .max
}

extension Int64 {
    /// Addition that sticks at the ends instead of trapping: model times near ``Release/neverNanoseconds``
    /// must stay "never", not wrap around into the past.
    @inlinable
    public func addingSaturating(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        if overflow { return other > 0 ? .max : .min }
        return sum
    }
}
