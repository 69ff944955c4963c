/// One thread's ``EarlyWakeUp`` with the real clock: the release timers of an event loop (every
/// connection on it) learn from the same wake-ups and share one spin budget, so the CPU bound
/// holds per thread however many connections it carries. The packet path's thread has one too.
///
/// Confined to its thread except ``spunNanoseconds`` (read by the bench from outside), hence
/// `@unchecked Sendable`.
public final class ReleaseTiming: @unchecked Sendable {
    private var model = EarlyWakeUp()
    private let clock = SystemClock()
    private let spun = LockedBox<Int64>(0)

    public init() {}

    /// When to arm the timer of a release due at `deadline`, armed at `now`.
    public func armTime(deadline: Int64, now: Int64) -> Int64 { model.armTime(deadline: deadline, now: now) }

    /// The timer armed at `armedAt` to fire at `armedFor` (for `deadline`) fired at `now`: learns
    /// from its lateness and returns when the release happens — the deadline if it came early,
    /// now if it came late. The caller decides what to release at that time, then calls
    /// ``wait(until:)`` before it acts.
    public func fired(armedAt: Int64, armedFor: Int64, deadline: Int64, now: Int64) -> Int64 {
        let spin = model.fired(armedAt: armedAt, armedFor: armedFor, deadline: deadline, now: now)
        guard spin > 0 else { return now }
        spun.withLock { $0 += spin }
        return deadline
    }

    /// Waits on the CPU until `time` (a spin of at most the lead, paid from the loop's budget
    /// by ``fired(armedAt:armedFor:deadline:now:)``); returns at once for a time already past.
    public func wait(until time: Int64) {
        while clock.now() < time {}
    }

    /// CPU time this loop has spent waiting for deadlines.
    public var spunNanoseconds: Int64 { spun.withLock { $0 } }
}
