import Dispatch

/// A capture's flush within a second of each packet written: a long-running `netsim relay
/// --pcap` (or `netsim shell --pcap`) showed nothing in its file for as long as libpcap's buffer
/// lasted (0 bytes after a whole request), and a `kill -9` lost all of it. Wireshark or
/// `tail -f` on the file now see each packet within a second. Armed by a packet, so an idle
/// capture never wakes up.
///
/// Not thread-safe: the owner holds its lock around ``written(flush:)`` and ``flushed()``.
public struct DelayedFlush: Sendable {
    /// How long a written packet may wait in the writer's buffer.
    public static let delay: DispatchTimeInterval = .seconds(1)

    private var armed = false

    public init() {}

    /// After a write: schedules `flush` (which takes the owner's lock, flushes and calls
    /// ``flushed()``) unless one is already due.
    public mutating func written(after delay: DispatchTimeInterval = Self.delay, flush: @escaping @Sendable () -> Void) {
        guard !armed else { return }
        armed = true
        DispatchQueue.global().asyncAfter(deadline: .now() + delay, execute: flush)
    }

    /// The flush has run: the next packet arms another.
    public mutating func flushed() { armed = false }
}
