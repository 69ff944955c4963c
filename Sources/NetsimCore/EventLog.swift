import Foundation

/// Receives every event as it is recorded, in order. Called with the log's lock held:
/// implementations must be quick (buffer, don't block).
public protocol EventSink: AnyObject, Sendable {
    func receive(_ event: Event)
    func flush()
}

/// The run's single timeline. Producers record; expectations, reports and sinks read.
///
/// Thread-safe. Memory is bounded by `retention`: past it the oldest events are discarded from
/// memory (sinks still see everything) and ``discardedCount`` says how many.
public final class EventLog: @unchecked Sendable {
    public let clock: any MonotonicClock
    /// The clock reading that is time zero for this log.
    public var origin: Int64 { lock.withLock { storedOrigin } }
    private var storedOrigin: Int64
    public let retention: Int

    private let lock = NSLock()
    private var buffer: [Event] = []
    private var head = 0  // index of the oldest event once the buffer is full
    private var discarded = 0
    private var sinks: [any EventSink] = []

    public init(clock: any MonotonicClock = SystemClock(), retention: Int = 1_000_000) {
        self.clock = clock
        self.storedOrigin = clock.now()
        self.retention = max(0, retention)
    }

    /// Records an event happening now.
    public func record(_ kind: EventKind, connection: ConnectionID? = nil) {
        record(kind, connection: connection, at: clock.now())
    }

    /// Records an event that happened at a monotonic clock reading.
    public func record(_ kind: EventKind, connection: ConnectionID? = nil, at monotonic: Int64) {
        lock.withLock {
            let event = Event(time: monotonic - storedOrigin, connection: connection, kind: kind)
            if retention > 0 {
                if buffer.count < retention {
                    buffer.append(event)
                } else {
                    buffer[head] = event
                    head = (head + 1) % retention
                    discarded += 1
                }
            } else {
                discarded += 1
            }
            for sink in sinks { sink.receive(event) }
        }
    }

    /// Moves time zero to a later clock reading (a scenario starts once everything it needs is
    /// up): events already recorded get earlier, possibly negative, times. Sinks have already
    /// seen those events with their old times.
    public func rebase(toMonotonic origin: Int64) {
        lock.withLock {
            let shift = origin - storedOrigin
            storedOrigin = origin
            for index in buffer.indices { buffer[index].time -= shift }
        }
    }

    /// The retained events, oldest first.
    public var events: [Event] {
        lock.withLock { Array(buffer[head...] + buffer[..<head]) }
    }

    /// Events no longer held in memory because of the retention bound.
    public var discardedCount: Int { lock.withLock { discarded } }

    /// The retained events of one connection, oldest first.
    public func events(for connection: ConnectionID) -> [Event] {
        events.filter { $0.connection == connection }
    }

    public func addSink(_ sink: any EventSink) {
        lock.withLock { sinks.append(sink) }
    }

    public func flush() {
        lock.withLock { for sink in sinks { sink.flush() } }
    }

    /// Waits until an event matching `predicate` has been recorded, polling every few
    /// milliseconds, and returns it; nil after `timeout`.
    public func waitFor(timeout: Duration, _ predicate: (Event) -> Bool) async -> Event? {
        let deadline = clock.now() + timeout.nanoseconds
        while true {
            if let match = events.first(where: predicate) { return match }
            if clock.now() >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }
}

/// Writes each event as one JSON line to a file descriptor, buffered.
public final class JSONLinesEventSink: EventSink, @unchecked Sendable {
    private let handle: FileHandle
    private let closeOnDeinit: Bool
    private var pending = Data()
    private let flushThreshold: Int

    /// Writes to an already open handle (standard output, for example).
    public init(handle: FileHandle, flushThreshold: Int = 64 * 1024, closeOnDeinit: Bool = false) {
        self.handle = handle
        self.flushThreshold = flushThreshold
        self.closeOnDeinit = closeOnDeinit
    }

    /// Creates (or truncates) a file and writes to it.
    public convenience init(path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: nil) else {
            throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: path])
        }
        self.init(handle: try FileHandle(forWritingTo: URL(fileURLWithPath: path)), closeOnDeinit: true)
    }

    public func receive(_ event: Event) {
        pending.append(contentsOf: Array(event.jsonLine.utf8))
        pending.append(0x0A)
        if pending.count >= flushThreshold { flush() }
    }

    public func flush() {
        guard !pending.isEmpty else { return }
        try? handle.write(contentsOf: pending)
        pending.removeAll(keepingCapacity: true)
    }

    deinit {
        flush()
        if closeOnDeinit { try? handle.close() }
    }
}
