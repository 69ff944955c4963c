/// The callers of ``EventLog/waitFor(timeout:_:)`` that have not got their answer yet.
///
/// Not thread-safe: the log keeps it under its lock. A waiter goes through three states:
/// registered (`armed`, while its caller looks through the events already recorded),
/// suspended (`waiting`, holding the continuation to resume), and answered (`resolved`, when the
/// answer — an event, or nil for a cancellation or timeout — came before the caller suspended).
/// The first answer wins; every path ends with the entry removed, so no continuation is lost or
/// resumed twice.
struct EventWaiters: Sendable {
    typealias Predicate = @Sendable (Event) -> Bool
    typealias Continuation = CheckedContinuation<Event?, Never>

    private enum State {
        case armed
        case waiting(Continuation)
        case resolved(Event?)
    }

    /// What a caller about to suspend must do.
    enum Suspension {
        /// The continuation is stored; an answer will resume it.
        case suspended
        /// The answer came already: resume with it now.
        case resumeNow(Event?)
    }

    private var states: [UInt64: State] = [:]
    private var nextID: UInt64 = 0
    /// The waiters still looking for an event, for the log to test each new event against.
    private(set) var watching: [(id: UInt64, predicate: Predicate)] = []

    /// Waiters registered and not yet removed (answered or not).
    var count: Int { states.count }

    mutating func register(_ predicate: @escaping Predicate) -> UInt64 {
        nextID += 1
        states[nextID] = .armed
        watching.append((nextID, predicate))
        return nextID
    }

    /// Answers a waiter (the first answer wins). Returns the continuation to resume — outside
    /// the lock — when its caller is already suspended.
    mutating func resolve(_ id: UInt64, with answer: Event?) -> Continuation? {
        switch states[id] {
        case .armed:
            states[id] = .resolved(answer)
            stopWatching(id)
            return nil
        case .waiting(let continuation):
            remove(id)
            return continuation
        case .resolved, nil:
            return nil
        }
    }

    /// Stores the continuation of a caller that found nothing among the recorded events.
    mutating func suspend(_ id: UInt64, _ continuation: Continuation) -> Suspension {
        switch states[id] {
        case .armed:
            states[id] = .waiting(continuation)
            return .suspended
        case .resolved(let answer):
            remove(id)
            return .resumeNow(answer)
        case .waiting, nil:
            preconditionFailure("waiter \(id) suspended twice or after it was removed")
        }
    }

    /// Forgets a waiter whose caller found its event among those already recorded.
    mutating func remove(_ id: UInt64) {
        states[id] = nil
        stopWatching(id)
    }

    private mutating func stopWatching(_ id: UInt64) {
        watching.removeAll { $0.id == id }
    }
}
