/// The events an ``EventLog`` keeps in memory: the newest `retention` of them, in a ring, with a
/// count of those it had to let go. Not thread-safe: the log holds it under its lock, and every
/// operation on the recording path is O(1).
struct EventRing: Sendable {
    let retention: Int
    private var buffer: [Event] = []
    /// Index of the oldest event once the buffer is full.
    private var head = 0
    private(set) var discarded = 0
    /// The newest time appended so far, to notice an event recorded with an earlier time.
    private var latest = Int64.min
    /// True once an event came with an earlier time than one before it (`record(at:)`): reads
    /// then sort, so readers always see time order.
    private var outOfOrder = false

    init(retention: Int) {
        self.retention = max(0, retention)
    }

    mutating func append(_ event: Event) {
        if event.time < latest { outOfOrder = true } else { latest = event.time }
        guard retention > 0 else {
            discarded += 1
            return
        }
        if buffer.count < retention {
            buffer.append(event)
        } else {
            buffer[head] = event
            head = (head + 1) % retention
            discarded += 1
        }
    }

    /// Shifts every kept event's time (the log's time zero moved); O(n), done once per run.
    mutating func shift(by nanoseconds: Int64) {
        for index in buffer.indices { buffer[index].time -= nanoseconds }
        if latest != .min { latest -= nanoseconds }
    }

    /// The kept events in time order (ties in the order they were recorded).
    var ordered: [Event] {
        let events = Array(buffer[head...] + buffer[..<head])
        guard outOfOrder else { return events }
        return events.enumerated()
            .sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }
            .map(\.element)
    }
}
