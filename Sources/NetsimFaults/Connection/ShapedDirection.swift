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

        /// The same entry, `by` later.
        func delayed(by delay: Int64) -> Entry {
            switch self {
            case .data(let chunk, let at): .data(chunk, at: at.addingSaturating(delay))
            case .marker(let marker, let at): .marker(marker, at: at.addingSaturating(delay))
            }
        }
    }

    /// What arrived while the link was down, unscheduled.
    private enum Waiting {
        case data(Chunk)
        case marker(Marker, holdFor: Int64)
    }

    let direction: Direction
    private(set) var shaper: DirectionShaper
    private(set) var isImpaired: Bool
    private var queue = Deque<Entry>()
    private var releases: [Release] = []
    /// Bytes held in the queue.
    private(set) var queuedBytes = 0
    /// Since when a fault (stall, blackhole) has held this direction: the link is down.
    private(set) var downSince: Int64?
    private var waiting: [Waiting] = []
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
    var canBypass: Bool { !isImpaired && queue.isEmpty && waiting.isEmpty }

    /// Runs the model on bytes that arrived at `now` and queues the pieces. Returns how long the
    /// model holds the chunk's last byte back (nil when it will never be delivered, or while the
    /// link is down: scheduled when it comes up), for metrics.
    @discardableResult
    mutating func enqueue(_ chunk: Chunk, at now: Int64) -> Int64? {
        if downSince != nil {
            waiting.append(.data(chunk))
            queuedBytes += chunk.count
            peakQueuedBytes = max(peakQueuedBytes, queuedBytes)
            return nil
        }
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
        if downSince != nil { return waiting.append(.marker(marker, holdFor: hold)) }
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
            || waiting.contains { if case .marker = $0 { true } else { false } }
    }

    // MARK: The link down (a stall, a blackhole)

    /// A fault holds this direction from `now`: the link carries nothing until ``comeUp(at:)``.
    mutating func goDown(at now: Int64) {
        if downSince == nil { downSince = now }
    }

    /// The hold ended at `now`. What the link was to carry after the hold began moves on by the
    /// hold's length (and the model's clock with it), and what arrived meanwhile is scheduled as
    /// arriving now, behind it: on a rate-limited link the held bytes then leave at the rate,
    /// as a link that was down does. Before, they kept their times and went at once when the
    /// hold lifted, faster than the link (QA 55: 121 KB in 0.25 s on a 780 kbit/s link), and a
    /// 2 s stall delayed a download by nothing.
    mutating func comeUp(at now: Int64) {
        guard let since = downSince else { return }
        downSince = nil
        let down = now - since
        if down > 0 {
            queue = Deque(queue.map { entry in
                entry.releaseTime >= since && entry.releaseTime != Release.neverNanoseconds ? entry.delayed(by: down) : entry
            })
            shaper.linkWasDown(from: since, for: down)
        }
        let arrived = waiting
        waiting = []
        for item in arrived {
            switch item {
            case .data(let chunk):
                queuedBytes -= chunk.count
                enqueue(chunk, at: now)
            case .marker(let marker, let hold):
                enqueue(marker, at: now, holdFor: hold)
            }
        }
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
        waiting.removeAll()
        queuedBytes = 0
        return discarded
    }

    /// Throws away the bytes queued, keeping the FIN, RST or end behind them, and returns how
    /// many were discarded (a `drop` as it fires: the bytes the link still held are lost too).
    mutating func discardData() -> Int {
        let discarded = queuedBytes
        queue.removeAll { if case .data = $0 { true } else { false } }
        waiting.removeAll { if case .data = $0 { true } else { false } }
        queuedBytes = 0
        return discarded
    }

    /// Applies a new link model from now on; bytes already queued keep their times.
    mutating func update(link: DirectionLink, roundTripNanoseconds: Int64) {
        shaper.update(link: link, roundTripNanoseconds: roundTripNanoseconds)
        isImpaired = link.isImpaired
    }
}
