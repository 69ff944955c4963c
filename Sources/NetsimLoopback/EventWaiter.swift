import NetsimCore

/// An ``EventSink`` a test waits on: each event as the relay (or anything else) records it, so
/// a test waits for "connection 2 closed" itself instead of polling a count or sleeping.
///
/// Add it to the log before the events it waits for can happen (sinks see only what comes after).
// `@unchecked Sendable`: it holds only a `Waitable`, which locks.
public final class EventWaiter: EventSink, @unchecked Sendable {
    private let seen = Waitable<[Event]>([])

    public init() {}

    /// A waiter already added to `log`.
    public convenience init(log: EventLog) {
        self.init()
        log.addSink(self)
    }

    public func receive(_ event: Event) { seen.update { $0.append(event) } }

    public func flush() {}

    /// Every event received so far, oldest first.
    public var events: [Event] { seen.value }

    /// The first event, received before or during the wait, that matches; nil after `timeout`.
    public func first(within timeout: Duration = .seconds(10), where predicate: @escaping @Sendable (Event) -> Bool) async -> Event? {
        await seen.wait(within: timeout) { events in events.first(where: predicate) }
    }

    /// Waits until `count` events matching `predicate` have been received; false after `timeout`.
    public func count(_ count: Int, within timeout: Duration = .seconds(10), where predicate: @escaping @Sendable (Event) -> Bool) async -> Bool {
        await seen.wait(within: timeout) { events in events.count(where: predicate) >= count ? true : nil } ?? false
    }
}
