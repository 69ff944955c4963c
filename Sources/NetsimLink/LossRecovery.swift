import NetsimCore

/// What a lossy path does to a TCP byte stream, as the receiving application sees it.
///
/// A userspace relay only sees bytes, so instead of dropping packets it *times* the bytes the way
/// TCP would deliver them across a lossy path: segments leave at the pace of a congestion window,
/// a lost segment holds up everything behind it for a retransmission timeout, and each loss
/// halves the window. The stream never loses bytes; it gets slower and stalls, which is what
/// applications actually experience.
///
/// Deliberately simple (see docs/link-models.md): every loss is repaired by a retransmission
/// timeout, never by fast retransmit, so a loss costs more than on a real Linux sender with
/// SACK; there is no delayed ACK, no receive window, and no idle-restart of the window.
public struct LossRecovery: Sendable {
    /// Payload bytes per simulated segment: a 1500-byte Ethernet MTU minus IPv4, TCP and the
    /// 12-byte timestamp option, what Linux actually puts in a full segment.
    public static let maximumSegmentSize = 1448
    /// RFC 6928's initial window of ten segments, Linux's default.
    public static let initialWindow = 10.0
    /// Linux's TCP_RTO_MIN; the timeout is the round trip plus this.
    public static let minimumRetransmissionTimeoutNanoseconds: Int64 = 200_000_000
    /// Linux's TCP_RTO_MAX: the doubling stops here.
    public static let maximumRetransmissionTimeoutNanoseconds: Int64 = 120_000_000_000
    /// Losses of one segment, in a row, after which the stream is given up (tcp_retries2 = 15).
    public static let maximumConsecutiveLosses = 15
    /// Round trips shorter than this are treated as this, so pacing never divides by ~zero.
    public static let minimumRoundTripNanoseconds: Int64 = 1_000_000

    /// Congestion window in segments.
    public private(set) var congestionWindow = LossRecovery.initialWindow
    /// Slow-start threshold in segments; infinite until the first loss.
    public private(set) var slowStartThreshold = Double.infinity
    /// True once a segment was lost ``maximumConsecutiveLosses`` times: nothing more is delivered.
    public private(set) var hasGivenUp = false
    /// How long after the lost segment was first sent the sender gave up: the retransmission
    /// timeouts it waited out (the decision is taken when the segment is handed over).
    public private(set) var givingUpNanoseconds: Int64?

    /// Times are kept as Double nanoseconds after `origin` so pacing gaps of a fraction of a
    /// nanosecond add up exactly instead of being rounded away on every segment.
    private var origin: Int64?
    private var nextDeparture = -Double.infinity
    /// Segments that already crossed a bursty (stateful) loss model: the ones in flight behind a
    /// lost segment, sent before its retransmission. Their fate was part of that recovery, so
    /// they do not draw again when the stream reaches them.
    private var alreadyDrawn = 0

    public init() {}

    /// The outcome for one segment.
    public struct Delivery: Equatable, Sendable {
        /// When the segment (or its successful retransmission) leaves; ``Release/neverNanoseconds``
        /// once the sender has given up.
        public var departure: Int64
        /// How many times it was lost before it got through.
        public var losses: Int
        /// Time spent waiting for retransmission timeouts.
        public var stallNanoseconds: Int64
    }

    /// The retransmission timeout after the first loss for a round trip: RTT + 200 ms.
    public static func initialRetransmissionTimeout(roundTripNanoseconds: Int64) -> Int64 {
        max(roundTripNanoseconds, minimumRoundTripNanoseconds) + minimumRetransmissionTimeoutNanoseconds
    }

    /// Sends one segment that the application handed over at `ready`.
    ///
    /// It departs no earlier than one pacing gap (RTT/cwnd) after the previous segment. Each loss
    /// halves the window and costs a timeout that doubles every time the same segment is lost
    /// again, up to 120 s; after 15 losses in a row the sender gives up for good.
    public mutating func send(
        segmentReadyAt ready: Int64,
        roundTripNanoseconds: Int64,
        loss: inout LossProcess,
        random: inout SeededRandom
    ) -> Delivery {
        if hasGivenUp { return Delivery(departure: Release.neverNanoseconds, losses: 0, stallNanoseconds: 0) }
        let origin = self.origin ?? ready
        self.origin = origin
        let roundTrip = Double(max(roundTripNanoseconds, Self.minimumRoundTripNanoseconds))

        var timeout = Double(Self.initialRetransmissionTimeout(roundTripNanoseconds: roundTripNanoseconds))
        var stall = 0.0
        var losses = 0
        // Backlogged: the application handed this segment over before the window let it go, so
        // more of the stream is right behind it. An idle pipe has nothing in flight.
        let backlogged = Double(ready.subtractingSaturating(origin)) <= nextDeparture
        if !backlogged { alreadyDrawn = 0 }
        // A segment that crossed the path with an earlier recovery's window draws nothing.
        let crossedAlready = alreadyDrawn > 0
        alreadyDrawn = max(0, alreadyDrawn - 1)
        while !crossedAlready, loss.nextSegmentIsLost(using: &random) {
            if losses == 0, backlogged, loss.isStateful { sendRestOfWindow(loss: &loss, random: &random) }
            if recordLoss(&losses, &stall, &timeout) { return Delivery(departure: Release.neverNanoseconds, losses: losses, stallNanoseconds: Int64.max) }
        }

        let departure = max(Double(ready.subtractingSaturating(origin)), nextDeparture) + stall
        if congestionWindow < slowStartThreshold {
            congestionWindow += 1
        } else {
            congestionWindow += 1 / congestionWindow
        }
        nextDeparture = departure + roundTrip / congestionWindow
        return Delivery(
            departure: origin.addingSaturating(Self.wholeNanoseconds(departure)),
            losses: losses,
            stallNanoseconds: Self.wholeNanoseconds(stall)
        )
    }

    /// The rest of the window (cwnd − 1 segments) crosses the path before the lost segment's
    /// retransmission does, and moves a bursty chain along: a burst hits a window's segments,
    /// which one recovery repairs, not the same segment's retransmissions one timeout after
    /// another (at 1% average loss in bursts of 4 that stalled a download for minutes and gave up
    /// on 1 burst in 50). Those segments do not draw again when the stream reaches them.
    private mutating func sendRestOfWindow(loss: inout LossProcess, random: inout SeededRandom) {
        let inFlight = max(0, Int(congestionWindow) - 1)
        for _ in 0..<inFlight { _ = loss.nextSegmentIsLost(using: &random) }
        alreadyDrawn = inFlight
    }

    /// One loss of the segment being sent: the window halves, and the timeout it costs doubles
    /// for the next. Returns true when it was the last the sender takes (it gives up).
    private mutating func recordLoss(_ losses: inout Int, _ stall: inout Double, _ timeout: inout Double) -> Bool {
        losses += 1
        slowStartThreshold = max(congestionWindow / 2, 2)
        congestionWindow = slowStartThreshold
        if losses >= Self.maximumConsecutiveLosses {
            hasGivenUp = true
            givingUpNanoseconds = Self.wholeNanoseconds(stall + timeout)
            return true
        }
        stall += timeout
        timeout = min(timeout * 2, Double(Self.maximumRetransmissionTimeoutNanoseconds))
        return false
    }

    /// Rounds up so that a departure is never earlier than the exact model time.
    static func wholeNanoseconds(_ value: Double) -> Int64 {
        let rounded = value.rounded(.up)
        if rounded >= 9.2e18 { return .max }
        if rounded <= -9.2e18 { return .min }
        return Int64(rounded)
    }
}

extension Int64 {
    @inlinable
    func subtractingSaturating(_ other: Int64) -> Int64 {
        let (difference, overflow) = subtractingReportingOverflow(other)
        if overflow { return other > 0 ? .min : .max }
        return difference
    }
}
