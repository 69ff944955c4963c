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
    /// What the queue holds in memory, as backpressure counts it: its bytes, and each piece's
    /// own keeping (the entry, its slot, the slice's header: about 64–100 bytes measured). A
    /// slicer of 1 byte made a piece of every byte, and `--buffer`'s 4 MiB of bytes held some
    /// 275 MB per connection (QA 66); counted so, the bound holds whatever the slice.
    var heldCost: Int { queuedBytes + (queue.count + waiting.count) * Self.pieceCost }

    /// What one queued piece costs beside its bytes.
    static var pieceCost: Int { 96 }

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

    /// Applies a new link model from now on. With `now`, a new rate applies to the bytes queued
    /// at the old rate's bottleneck too (``retimeBacklog(from:now:)``); the others keep their times.
    mutating func update(link: DirectionLink, roundTripNanoseconds: Int64, now: Int64? = nil) {
        let old = shaper.link
        shaper.update(link: link, roundTripNanoseconds: roundTripNanoseconds)
        isImpaired = link.isImpaired
        if let now, old.bandwidth != link.bandwidth { retimeBacklog(from: old, now: now) }
    }

    /// The bytes still waiting for the old rate's bottleneck leave at the new rate, one after
    /// another from now, as a link whose rate changed drains its queue. The relay reads ahead (up
    /// to its buffer, 4 MiB), and each byte's time was fixed as it was read: a rate step reached
    /// a download under way only once those had gone, at 1 Mbit/s half a minute later (QA 56: a
    /// drop to 100 kbit/s at 1 s changed nothing, and the transfer ended at 1.6 s, not 7 s).
    ///
    /// Waiting at the bottleneck: queued bytes due later than the old latency (and three times
    /// its jitter) from now; those due sooner are taken as on their way, and keep their times.
    /// Left alone: a link with loss (its times hold retransmission stalls, not a queue), a trace
    /// (its opportunities are the trace's), and a link held down by a fault (it moves them when
    /// it comes up).
    private mutating func retimeBacklog(from old: DirectionLink, now: Int64) {
        let new = shaper.link
        guard old.bandwidth != nil, old.trace == nil, new.trace == nil, !(old.loss?.canLose ?? false), downSince == nil,
              !shaper.isStalledForever else { return }
        let horizon = now.addingSaturating(max(0, old.latency.nanoseconds)).addingSaturating(3 * max(0, old.jitter.nanoseconds))
        guard let first = queue.firstIndex(where: { $0.releaseTime > horizon && $0.releaseTime != Release.neverNanoseconds }) else { return }
        let rate = new.bandwidth?.bytesPerSecond
        if let rate, !(rate > 0 && rate.isFinite) { return }  // a zero rate: the shaper stalls what comes, as before
        let start = max(now, first > queue.startIndex ? queue[first - 1].releaseTime : now)
        var serialized = 0.0  // ns after `start`
        var previous = (old: start, new: start)
        for index in first..<queue.endIndex {
            switch queue[index] {
            case .data(let chunk, let at):
                if let rate { serialized += Double(chunk.count) * 1e9 / rate }
                let time = start.addingSaturating(Int64(serialized.rounded(.up)))
                queue[index] = .data(chunk, at: time)
                previous = (at, time)
            case .marker(let marker, let at):
                // Its gap after the bytes ahead of it is kept (a slow-close's hold).
                let time = previous.new.addingSaturating(max(0, at - previous.old))
                queue[index] = .marker(marker, at: time)
                previous = (at, time)
            }
        }
        shaper.backlogRetimed(lastRelease: previous.new, rateBusyUntil: start.addingSaturating(Int64(serialized.rounded(.up))))
    }
}
