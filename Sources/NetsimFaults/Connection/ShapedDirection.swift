import DequeModule
import NetsimCore
import NetsimLink

/// One direction of a connection: the link model's state and the bytes it is holding back.
///
/// Bytes enter with ``enqueue(_:at:)`` and wait until the model's release time; FIN/RST markers
/// wait behind the bytes ahead of them. The connection writes what is due and arms a timer for
/// the next release. A value inside ``ConnectionMachine``: no I/O, no clock of its own.
struct ShapedDirection<Chunk: ByteChunk> {
    enum Marker: Equatable {
        /// Forward a half-close.
        case fin
        /// Forward a reset.
        case rst
        /// A fault ends the whole connection once the bytes ahead have gone (limit, cut):
        /// both legs with FIN, or the client's with RST.
        case endConnection(fault: FaultName, how: CloseKind, detail: String)
    }

    enum Entry {
        case data(Chunk, at: Int64)
        case marker(Marker, at: Int64)

        var releaseTime: Int64 {
            switch self {
            case .data(_, let at), .marker(_, let at): at
            }
        }
    }

    let direction: Direction
    private(set) var shaper: DirectionShaper
    private(set) var isImpaired: Bool
    private var queue = Deque<Entry>()
    private var releases: [Release] = []
    /// Bytes held in the queue.
    private(set) var queuedBytes = 0
    /// The largest `queuedBytes` has been, for backpressure checks.
    private(set) var peakQueuedBytes = 0
    /// Bytes written to the far side.
    var deliveredBytes = 0
    /// The deadline the release timer is armed for (`.max`: none).
    var timerDeadline: Int64 = .max
    /// A marker has been queued: no more data will come from the source.
    private(set) var sourceFinished = false
    /// The model's sender giving up has been logged (it is logged once).
    private var gaveUpLogged = false

    init(direction: Direction, shaper: DirectionShaper) {
        self.direction = direction
        self.shaper = shaper
        self.isImpaired = shaper.link.isImpaired
    }

    /// True when bytes can be written straight through: no model active and nothing waiting.
    var canBypass: Bool { !isImpaired && queue.isEmpty }

    /// Runs the model on bytes that arrived at `now` and queues the pieces. Returns how long the
    /// model holds the chunk's last byte back (nil when it will never be delivered), for metrics.
    @discardableResult
    mutating func enqueue(_ chunk: Chunk, at now: Int64) -> Int64? {
        releases.removeAll(keepingCapacity: true)
        shaper.schedule(bytes: chunk.count, arrivedAt: now, into: &releases)
        var offset = 0
        var last = now
        for release in releases where release.bytes > 0 {
            let end = min(chunk.count, offset + release.bytes)
            guard end > offset else { break }
            queue.append(.data(offset == 0 && end == chunk.count ? chunk : chunk.slice(offset..<end), at: release.at))
            queuedBytes += end - offset
            offset = end
            last = max(last, release.at)
        }
        peakQueuedBytes = max(peakQueuedBytes, queuedBytes)
        return last == Release.neverNanoseconds ? nil : last - now
    }

    /// How long after its lost segment the model's simulated sender gave up: the first time it
    /// is asked after that, nil before and after.
    mutating func takeNewsOfGivingUp() -> Int64? {
        guard let after = shaper.senderGaveUpAfter, !gaveUpLogged else { return nil }
        gaveUpLogged = true
        return after
    }

    /// Queues a marker behind the bytes already queued, delayed like a byte arriving now and
    /// then held `holdFor` longer (slow-close).
    mutating func enqueue(_ marker: Marker, at now: Int64, holdFor hold: Int64 = 0) {
        sourceFinished = true
        let at = isImpaired ? shaper.releaseTimeForMarker(arrivedAt: now) : now
        queue.append(.marker(marker, at: max(at, queue.last?.releaseTime ?? at) + hold))
    }

    /// When a byte arriving now would be released (now, on an unimpaired link). The outage fault
    /// answers a request when it would have reached the server.
    mutating func markerReleaseTime(arrivedAt now: Int64) -> Int64 {
        isImpaired ? shaper.releaseTimeForMarker(arrivedAt: now) : now
    }

    /// A FIN, RST or end is queued, not yet carried out.
    var holdsMarker: Bool {
        queue.contains { if case .marker = $0 { true } else { false } }
    }

    /// The release time of the head of the queue, if any.
    var nextReleaseTime: Int64? { queue.first?.releaseTime }

    /// Removes and returns the head if it is due at `now`.
    mutating func popDue(now: Int64) -> Entry? {
        guard let head = queue.first, head.releaseTime <= now else { return nil }
        let entry = queue.removeFirst()
        if case .data(let chunk, _) = entry { queuedBytes -= chunk.count }
        return entry
    }

    /// Throws away everything queued and returns how many data bytes were discarded.
    @discardableResult
    mutating func discardAll() -> Int {
        let discarded = queuedBytes
        queue.removeAll()
        queuedBytes = 0
        return discarded
    }

    /// Applies a new link model from now on; bytes already queued keep their times.
    mutating func update(link: DirectionLink, roundTripNanoseconds: Int64) {
        shaper.update(link: link, roundTripNanoseconds: roundTripNanoseconds)
        isImpaired = link.isImpaired
    }
}
