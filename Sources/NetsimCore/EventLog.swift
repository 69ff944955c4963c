/// The run's single timeline. Producers record; expectations, reports, sinks and waiters read.
///
/// Every relay event loop records into the same log, so recording is kept short: one lock held
/// for an O(1) append (and the clock read, so the kept events are in time order). Sinks and
/// waiters are served outside that lock by one thread at a time — whichever producer finds
/// nobody serving them takes the turn and serves every event queued meanwhile, in order —
/// so a slow sink holds up one producer, not every event loop behind a lock. Once every
/// `record` call has returned, every sink has received every event.
///
/// Memory is bounded by `retention`: past it the oldest events are discarded from memory (sinks
/// still see everything) and ``discardedCount`` says how many.
public final class EventLog: Sendable {
    public let clock: any MonotonicClock
    public let retention: Int

    /// What producers touch: held for O(1) work per event.
    private struct State: Sendable {
        var origin: Int64
        var ring: EventRing
        var waiters = EventWaiters()
        var sinkCount = 0
        /// Events sinks and waiters have not been served yet, oldest first.
        var queued: [Event] = []
        /// True while a thread is serving the queue (it empties it before it lets go).
        var serving = false

        /// Whether anyone but the ring needs each event.
        var observed: Bool { sinkCount > 0 || !waiters.watching.isEmpty }
    }

    private let state: LockedBox<State>
    /// Held while sinks and waiters are served, so they see one event at a time, in order.
    private let sinks = LockedBox<[any EventSink]>([])

    public init(clock: any MonotonicClock = SystemClock(), retention: Int = 1_000_000) {
        self.clock = clock
        self.retention = max(0, retention)
        state = LockedBox(State(origin: clock.now(), ring: EventRing(retention: retention)))
    }

    /// The clock reading that is time zero for this log.
    public var origin: Int64 { state.withLock { $0.origin } }

    /// Records an event happening now.
    public func record(_ kind: EventKind, connection: ConnectionID? = nil) {
        append(kind, connection, at: nil)
    }

    /// Records an event that happened at a monotonic clock reading.
    public func record(_ kind: EventKind, connection: ConnectionID? = nil, at monotonic: Int64) {
        append(kind, connection, at: monotonic)
    }

    private func append(_ kind: EventKind, _ connection: ConnectionID?, at monotonic: Int64?) {
        let mustServe = state.withLock { state -> Bool in
            let event = Event(time: (monotonic ?? clock.now()) - state.origin, connection: connection, kind: kind)
            state.ring.append(event)
            guard state.observed else { return false }
            state.queued.append(event)
            guard !state.serving else { return false }
            state.serving = true
            return true
        }
        if mustServe { sinks.withLock { serveQueue(to: $0, releasingTurn: true) } }
    }

    /// Hands the queued events to the sinks and waiters until the queue is empty. Called with
    /// `sinks` locked. The producer whose turn it is gives the turn back when it finds the queue
    /// empty (under the state lock, so an event queued after that finds the turn free and
    /// serves itself); `flush` and `addSink` serve the queue without taking the turn.
    private func serveQueue(to sinks: [any EventSink], releasingTurn: Bool) {
        while true {
            let next = state.withLock { state -> (events: [Event], watching: [(id: UInt64, predicate: EventWaiters.Predicate)])? in
                if state.queued.isEmpty {
                    if releasingTurn { state.serving = false }
                    return nil
                }
                defer { state.queued.removeAll() }
                return (state.queued, state.waiters.watching)
            }
            guard let next else { return }
            var answered: Set<UInt64> = []
            for event in next.events {
                for sink in sinks { sink.receive(event) }
                for waiter in next.watching where !answered.contains(waiter.id) && waiter.predicate(event) {
                    answered.insert(waiter.id)
                    answer(waiter.id, with: event)
                }
            }
        }
    }

    private func answer(_ waiter: UInt64, with event: Event?) {
        state.withLock { $0.waiters.resolve(waiter, with: event) }?.resume(returning: event)
    }

    /// Moves time zero to a later clock reading (a scenario starts once everything it needs is
    /// up): events already recorded get earlier, possibly negative, times. Sinks have already
    /// seen (or been queued) those events with their old times.
    public func rebase(toMonotonic origin: Int64) {
        state.withLock { state in
            state.ring.shift(by: origin - state.origin)
            state.origin = origin
        }
    }

    /// The retained events, in time order.
    public var events: [Event] { state.withLock { $0.ring.ordered } }

    /// Events no longer held in memory because of the retention bound.
    public var discardedCount: Int { state.withLock { $0.ring.discarded } }

    /// The retained events of one connection, in time order.
    public func events(for connection: ConnectionID) -> [Event] {
        events.filter { $0.connection == connection }
    }

    /// Adds a sink; it receives the events recorded from now on.
    public func addSink(_ sink: any EventSink) {
        sinks.withLock { sinks in
            serveQueue(to: sinks, releasingTurn: false)
            sinks.append(sink)
            state.withLock { $0.sinkCount += 1 }
        }
    }

    /// Serves every event recorded so far, then flushes every sink.
    public func flush() {
        sinks.withLock { sinks in
            serveQueue(to: sinks, releasingTurn: false)
            for sink in sinks { sink.flush() }
        }
    }

    /// Waiters registered and not yet answered and removed (tests check none is left behind).
    var waiterCount: Int { state.withLock { $0.waiters.count } }
}

extension EventLog {
    /// The first retained event matching `predicate`, or else the first recorded afterwards that
    /// matches; nil after `timeout` or when the calling task is cancelled.
    ///
    /// Nothing polls: the caller suspends and is resumed by the producer whose event matches.
    /// `predicate` runs outside the log's lock (it may read ``events``), on the caller's task for
    /// the retained events and on a producer's thread for new ones, one event at a time; it must
    /// not call `flush()` or `addSink(_:)`.
    public func waitFor(timeout: Duration, _ predicate: @escaping @Sendable (Event) -> Bool) async -> Event? {
        await withTaskGroup(of: Event?.self) { group in
            group.addTask { await self.firstEvent(matching: predicate) }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            // The first to finish answers; cancelling the other ends it promptly (the waiter is
            // answered nil and removed, the sleep ends).
            let answer = await group.next() ?? nil
            group.cancelAll()
            return answer
        }
    }

    private func firstEvent(matching predicate: @escaping EventWaiters.Predicate) async -> Event? {
        // Registered before looking at the retained events: an event recorded from here on is
        // tested by its producer, one recorded before is among the retained events.
        let id = state.withLock { $0.waiters.register(predicate) }
        if let match = events.first(where: predicate) {
            state.withLock { $0.waiters.remove(id) }
            return match
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                if case .resumeNow(let answer) = state.withLock({ $0.waiters.suspend(id, continuation) }) {
                    continuation.resume(returning: answer)
                }
            }
        } onCancel: {
            answer(id, with: nil)
        }
    }
}
