#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A monotonic time source in nanoseconds.
///
/// Models take time as a parameter and never read a clock themselves; the relay reads
/// ``SystemClock`` and tests drive ``ManualClock``. ``SystemClock`` reads CLOCK_MONOTONIC,
/// the same clock as `NIODeadline.uptimeNanoseconds`, so model release times convert directly
/// into event-loop deadlines.
public protocol MonotonicClock: Sendable {
    /// Nanoseconds since an arbitrary fixed origin.
    func now() -> Int64
}

/// The machine's monotonic clock.
public struct SystemClock: MonotonicClock {
    public init() {}

    public func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}

/// A clock that only moves when a test moves it.
public final class ManualClock: MonotonicClock {
    private let current: LockedBox<Int64>

    public init(start: Int64 = 0) { current = LockedBox(start) }

    public func now() -> Int64 { current.withLock { $0 } }

    public func advance(by nanoseconds: Int64) { current.withLock { $0 += nanoseconds } }

    public func advance(by duration: Duration) { advance(by: duration.nanoseconds) }

    public func set(_ nanoseconds: Int64) { current.withLock { $0 = nanoseconds } }
}
