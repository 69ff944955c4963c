import Foundation
import NetsimCore

/// Every request the server received, in arrival order; shared by all connections.
///
/// A request is appended when its head arrives (so it is on record even if the client goes away
/// before the answer) and its body count grows as body bytes arrive.
// `@unchecked Sendable`: every request record is read and written with the lock held.
final class RequestLog: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [ServerRequest] = []
    private let clock: any MonotonicClock
    /// Read at each request, not copied: a scenario run moves the log's time zero (`rebase`)
    /// after the server started.
    private let eventLog: EventLog?
    private var ownOrigin: Int64

    /// Times are on `eventLog`'s timeline when given, else nanoseconds since ``restartClock()``.
    init(eventLog: EventLog?) {
        clock = eventLog?.clock ?? SystemClock()
        self.eventLog = eventLog
        ownOrigin = clock.now()
    }

    /// Starts the server's own timeline (no event log): time 0 is the server's start.
    func restartClock() {
        guard eventLog == nil else { return }
        let now = clock.now()
        lock.withLock { ownOrigin = now }
    }

    /// Nanoseconds on the log's timeline.
    func now() -> Int64 {
        let now = clock.now()
        return now - (eventLog?.origin ?? lock.withLock { ownOrigin })
    }

    /// Appends a request and returns its index for ``addBodyBytes(_:to:)``.
    func append(_ request: ServerRequest) -> Int {
        lock.withLock {
            entries.append(request)
            return entries.count - 1
        }
    }

    func addBodyBytes(_ count: Int, to index: Int) {
        lock.withLock { entries[index].bodyBytes += count }
    }

    var all: [ServerRequest] { lock.withLock { entries } }
}
