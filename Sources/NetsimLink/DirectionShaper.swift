import NetsimCore

/// The stateful model for one direction of one connection. Pure: same inputs + same seed → same outputs.
///
/// Bytes go through four stages as they arrive: **slice ▸ loss reaction ▸ latency ▸ rate**
/// (docs/link-models.md describes each). The shaper never holds bytes and never reads a clock:
/// the relay says how many bytes arrived when, and gets back when each piece may be written.
public struct DirectionShaper: Sendable {
    /// The settings in force; change them with ``update(link:roundTripNanoseconds:)``.
    public private(set) var link: DirectionLink
    /// The round trip the loss-reaction stage paces and times out against.
    public private(set) var roundTripNanoseconds: Int64

    private var delay: DelaySampler
    private var slicer = Slicer()
    private var lossProcess: LossProcess?
    private var recovery = LossRecovery()
    private var rateLimiter = RateLimiter()
    /// The rate stage when the link follows a recorded trace instead of a constant bandwidth.
    private var traceLimiter: TraceRateLimiter?
    /// Where a trace's time starts (the relay's start): see ``TraceRateLimiter``.
    private let traceEpoch: Int64
    /// Jitter and loss draw from separate streams, so turning jitter on or off does not change
    /// which segments are lost (and the other way round).
    private var jitterRandom: SeededRandom
    private var lossRandom: SeededRandom
    /// Slice sizes' variation draws from a third stream: turning it on changes neither.
    private var sliceRandom: SeededRandom
    /// The latest release handed out: nothing is ever released before it (TCP delivers in order).
    public private(set) var lastReleaseNanoseconds = Int64.min

    /// - Parameter traceEpoch: when a ``DirectionLink/trace``'s time 0 is, on the caller's clock.
    public init(link: DirectionLink, roundTripNanoseconds: Int64, random: SeededRandom, traceEpoch: Int64 = 0) {
        self.link = link
        self.traceEpoch = traceEpoch
        traceLimiter = link.trace.map { TraceRateLimiter(trace: $0, epoch: traceEpoch) }
        self.roundTripNanoseconds = roundTripNanoseconds
        delay = DelaySampler(link: link)
        lossProcess = Self.activeLoss(link)
        jitterRandom = random.derived(1)
        lossRandom = random.derived(2)
        sliceRandom = random.derived(3)
    }

    /// True once the simulated sender has given up (or the rate is zero): every byte from now on
    /// is released at ``Release/neverNanoseconds``.
    public var isStalledForever: Bool { lastReleaseNanoseconds == Release.neverNanoseconds }

    /// Once the loss stage's simulated sender lost one segment
    /// ``LossRecovery/maximumConsecutiveLosses`` times in a row and gave up (not a zero rate):
    /// how long after that segment was sent (its retransmission timeouts). Nil until then.
    public var senderGaveUpAfter: Int64? { recovery.givingUpNanoseconds }

    /// `count` bytes arrived from the source at `now`. Appends pieces to `out`, in stream order, whose
    /// byte counts sum to exactly `count`. Release times never decrease across all calls (bytes never
    /// overtake each other) and are never earlier than `now`. `Release.neverNanoseconds` (Int64.max)
    /// means the bytes will never be delivered (e.g. 100% loss: the stream stalls forever).
    ///
    /// Consecutive pieces of one slice with the same release time are merged; nothing is merged
    /// across slices or calls.
    public mutating func schedule(bytes count: Int, arrivedAt now: Int64, into out: inout [Release]) {
        guard count > 0 else { return }
        if let rate = link.bandwidth, !(rate.bytesPerSecond > 0) { lastReleaseNanoseconds = Release.neverNanoseconds }
        if isStalledForever {
            out.append(Release(bytes: count, at: Release.neverNanoseconds))
            return
        }
        guard link.isSliced, let sliceSize = link.sliceSize else {
            passThroughLoss(bytes: count, arrivedAt: now, into: &out, mergeFloor: out.count)
            return
        }
        let sliceDelay = max(0, link.sliceDelay.nanoseconds)
        var arrival = slicer.firstSlice(arrivedAt: now)
        var remaining = count
        while true {
            let bytes = min(nextSliceSize(around: sliceSize), remaining)
            passThroughLoss(bytes: bytes, arrivedAt: arrival, into: &out, mergeFloor: out.count)
            remaining -= bytes
            if remaining == 0 { break }
            arrival = arrival.addingSaturating(sliceDelay)
        }
        slicer.finished(lastSliceAt: arrival, sliceDelay: sliceDelay)
    }

    /// When bytes that arrive now with an empty pipe would be released; used to delay a FIN/RST
    /// marker behind the data ahead of it: returns max(lastRelease, now + latency sample).
    ///
    /// The marker counts as released: later bytes (there should be none) cannot overtake it.
    public mutating func releaseTimeForMarker(arrivedAt now: Int64) -> Int64 {
        if isStalledForever { return Release.neverNanoseconds }
        let time = max(lastReleaseNanoseconds, now.addingSaturating(delay.sample(using: &jitterRandom)))
        lastReleaseNanoseconds = time
        return time
    }

    /// The link carried nothing for `duration` from `start` (a fault held it): what it was to
    /// release after `start` moves on by that long, and the rate stage is busy that much longer,
    /// so bytes arriving after serialize behind the delayed ones. A link idle at `start` is
    /// unchanged. (A trace's opportunities, on the relay's clock, are not moved.)
    public mutating func linkWasDown(from start: Int64, for duration: Int64) {
        guard duration > 0, !isStalledForever else { return }
        if lastReleaseNanoseconds >= start { lastReleaseNanoseconds = lastReleaseNanoseconds.addingSaturating(duration) }
        rateLimiter.wasDown(from: start, for: duration)
    }

    /// The caller moved the bytes queued at the bottleneck to a new rate (a link change): the
    /// last of them now leaves at `lastRelease`, and the rate stage is busy until `rateBusyUntil`.
    public mutating func backlogRetimed(lastRelease: Int64, rateBusyUntil: Int64) {
        lastReleaseNanoseconds = lastRelease
        rateLimiter.busy(until: rateBusyUntil)
    }

    /// Change the link mid-stream (a scenario step). Ordering with already-scheduled bytes is kept.
    ///
    /// Kept: the last release time (no overtaking), the slicer's position, the rate stage's
    /// busy-until time, and the congestion window. The loss process restarts only when the loss
    /// model itself changes. Bytes already scheduled keep their times (so bytes already given to
    /// the rate stage keep the old rate's); in particular a stream given up as lost stays stalled
    /// even if the new link is clean.
    public mutating func update(link newLink: DirectionLink, roundTripNanoseconds newRoundTrip: Int64) {
        if newLink.loss != link.loss { lossProcess = Self.activeLoss(newLink) }
        if newLink.trace != link.trace { traceLimiter = newLink.trace.map { TraceRateLimiter(trace: $0, epoch: traceEpoch) } }
        link = newLink
        roundTripNanoseconds = newRoundTrip
        delay = DelaySampler(link: newLink)
    }

    /// `size` ± up to ``DirectionLink/sliceVariation`` bytes, uniformly, at least 1.
    private mutating func nextSliceSize(around size: Int) -> Int {
        let variation = link.sliceVariation
        guard variation > 0 else { return size }
        let offset = Int(sliceRandom.next() % UInt64(2 * variation + 1)) - variation
        return max(1, size + offset)
    }

    private static func activeLoss(_ link: DirectionLink) -> LossProcess? {
        guard let model = link.loss, model.canLose else { return nil }
        return LossProcess(model: model)
    }

    // MARK: Stages

    /// Loss reaction: without loss the piece passes unchanged; with it, the piece is cut into
    /// segments timed by ``LossRecovery``.
    private mutating func passThroughLoss(bytes: Int, arrivedAt arrival: Int64, into out: inout [Release], mergeFloor: Int) {
        guard var process = lossProcess else {
            passThroughLatencyAndRate(bytes: bytes, readyAt: arrival, into: &out, mergeFloor: mergeFloor)
            return
        }
        var remaining = bytes
        while remaining > 0 {
            let segment = min(LossRecovery.maximumSegmentSize, remaining)
            let delivery = recovery.send(
                segmentReadyAt: arrival, roundTripNanoseconds: roundTripNanoseconds,
                loss: &process, random: &lossRandom)
            passThroughLatencyAndRate(bytes: segment, readyAt: delivery.departure, into: &out, mergeFloor: mergeFloor)
            remaining -= segment
        }
        lossProcess = process
    }

    /// Latency + jitter, never overtaking; then serialization at the rate in ~1 ms pieces, or at
    /// the trace's delivery opportunities.
    private mutating func passThroughLatencyAndRate(bytes: Int, readyAt ready: Int64, into out: inout [Release], mergeFloor: Int) {
        if ready == Release.neverNanoseconds || isStalledForever {
            lastReleaseNanoseconds = Release.neverNanoseconds
            Self.append(bytes, at: Release.neverNanoseconds, to: &out, mergeFloor: mergeFloor)
            return
        }
        let delayed = max(ready.addingSaturating(delay.sample(using: &jitterRandom)), lastReleaseNanoseconds)
        if var traced = traceLimiter {
            traced.release(bytes: bytes, readyAt: delayed) { piece, allowed in
                let time = max(allowed, lastReleaseNanoseconds)
                lastReleaseNanoseconds = time
                Self.append(piece, at: time, to: &out, mergeFloor: mergeFloor)
            }
            traceLimiter = traced
            return
        }
        guard let rate = link.bandwidth?.bytesPerSecond, rate.isFinite else {
            lastReleaseNanoseconds = delayed
            Self.append(bytes, at: delayed, to: &out, mergeFloor: mergeFloor)
            return
        }
        let pieceSize = RateLimiter.pieceBytes(bytesPerSecond: rate)
        var remaining = bytes
        while remaining > 0 {
            let piece = min(pieceSize, remaining)
            let allowed = rateLimiter.release(bytes: piece, arrivedAt: delayed, bytesPerSecond: rate)
            let time = max(allowed, lastReleaseNanoseconds)
            lastReleaseNanoseconds = time
            Self.append(piece, at: time, to: &out, mergeFloor: mergeFloor)
            remaining -= piece
        }
    }

    private static func append(_ bytes: Int, at time: Int64, to out: inout [Release], mergeFloor: Int) {
        if out.count > mergeFloor, out[out.count - 1].at == time {
            out[out.count - 1].bytes += bytes
        } else {
            out.append(Release(bytes: bytes, at: time))
        }
    }
}
