import Foundation

/// Receives every event an ``EventLog`` records, in the log's order.
///
/// The log calls its sinks from one thread at a time, outside its recording lock, usually on the
/// thread of a producer that recorded an event meanwhile: implementations must be quick (buffer,
/// don't block) and must not call the log's `flush()` or `addSink(_:)`.
public protocol EventSink: AnyObject, Sendable {
    func receive(_ event: Event)
    func flush()
}

/// Writes each event as one JSON line to a file descriptor, buffered.
public final class JSONLinesEventSink: EventSink {
    private let handle: FileHandle
    private let closeOnDeinit: Bool
    private let flushThreshold: Int
    /// Lines not written yet, and whether a write failed (a reader that left the pipe, a full
    /// disk: nothing more is written). Locked although the log calls one sink method at a time,
    /// so that the compiler can check it, and `deinit`'s last flush needs no reasoning.
    private let pending = LockedBox(Pending())
    private struct Pending {
        var lines = Data()
        var failed = false
    }
    /// Told once, with the system's reason, when a write fails: the events from then on are lost.
    private let onFailure: (@Sendable (String) -> Void)?

    /// Writes to an already open handle (standard output, for example).
    ///
    /// - Parameter onFailure: told once when a write fails (QA 63: `--events - | head -2` lost
    ///   every later event without a word).
    public init(handle: FileHandle, flushThreshold: Int = 64 * 1024, closeOnDeinit: Bool = false,
                onFailure: (@Sendable (String) -> Void)? = nil) {
        self.handle = handle
        self.flushThreshold = flushThreshold
        self.closeOnDeinit = closeOnDeinit
        self.onFailure = onFailure
    }

    /// Creates (or truncates) a file and writes to it (each line at once with a threshold of 0).
    /// Throws the system's reason (an `NSPOSIXErrorDomain` error: no such folder, a directory,
    /// no permission) when it cannot.
    /// A path that is netsim's own standard output or error (``StandardStream/same(as:)``) is
    /// written through it, after what the stream holds.
    public convenience init(path: String, flushThreshold: Int = 64 * 1024, onFailure: (@Sendable (String) -> Void)? = nil) throws {
        if let stream = StandardStream.same(as: path) {
            self.init(handle: FileHandle(fileDescriptor: stream.descriptor, closeOnDealloc: false), flushThreshold: flushThreshold, onFailure: onFailure)
            return
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw NSError(domain: NSPOSIXErrorDomain, code: Int(errno), userInfo: [NSFilePathErrorKey: path]) }
        self.init(handle: FileHandle(fileDescriptor: fd, closeOnDealloc: false), flushThreshold: flushThreshold, closeOnDeinit: true, onFailure: onFailure)
    }

    public func receive(_ event: Event) {
        receive(line: event.jsonLine)
    }

    /// Writes one line already rendered (a newline is added): several logs can share the sink
    /// this way, each line labelled (`netsim serve`'s proxies). Safe from any thread.
    public func receive(line: String) {
        pending.withLock { pending in
            pending.lines.append(contentsOf: line.utf8)
            pending.lines.append(0x0A)
            if pending.lines.count >= flushThreshold { write(&pending) }
        }
    }

    public func flush() {
        pending.withLock { write(&$0) }
    }

    private func write(_ pending: inout Pending) {
        guard !pending.lines.isEmpty else { return }
        defer { pending.lines.removeAll(keepingCapacity: true) }
        guard !pending.failed else { return }
        do {
            try handle.write(contentsOf: pending.lines)
        } catch {
            pending.failed = true
            onFailure?(error.posixReason)
        }
    }

    deinit {
        flush()
        if closeOnDeinit { try? handle.close() }
    }
}
