import NetsimCore
import NetsimLink

/// Everything one relayed connection decides, without I/O: its phase, who closed what and how,
/// the bytes each shaped direction holds back, the faults acting on it.
///
/// Events come in as method calls (bytes read from a leg, a FIN, a reset, a timer, a fault
/// applied or lifted), each with the event loop's time; decisions go out as
/// ``ConnectionAction``s in ``actions``, which the executor (the relay's channel handlers) carries
/// out in order. The pattern is SwiftNIO's own state machines: the same events always give the
/// same actions, so tests drive a machine directly, with `[UInt8]` chunks and a time they choose.
///
/// The unimpaired, fault-free path bypasses the machine: the executor asks ``canBypass(from:)``
/// after each event and writes such reads itself (one check per read).
public struct ConnectionMachine<Chunk: ByteChunk>: Sendable {
    public enum Phase: Sendable, Equatable {
        /// Accepted; the upstream connect has not been decided yet.
        case accepted
        /// Waiting for the upstream connect (scheduled, held by a fault, or in flight).
        case connecting
        /// Both legs up (or the relay answers in the server's place, or gave up on upstream).
        case relaying
        /// Both legs closed; nothing more happens.
        case finished
    }

    /// Where the upstream leg is.
    public enum Upstream: Sendable, Equatable {
        /// Not asked for (yet), or a stand-in answers instead.
        case none
        /// The connect waits for a timer (slow-connect, SYN loss).
        case waiting
        /// The connect waits until a fault lifts (blackhole).
        case held
        case inFlight
        case connected
        /// Refused, unreachable or timed out; the client was shown the same.
        case failed
    }

    /// What the machine knows of one leg's socket.
    struct LegState: Sendable {
        var active = false
        /// We sent FIN or RST, or closed it.
        var outputClosed = false
        /// We closed or reset it ourselves.
        var closedByRelay = false
        /// Its peer reset it (seen and forwarded).
        var resetSeen = false
        var writable = true
        var readsAllowed = false
        /// Backpressure hysteresis of the direction read from this leg.
        var paused = false
        /// Bytes written on the fast path and not yet flushed.
        var unflushed = 0
    }

    /// A fault acting on this connection.
    struct ActiveFault: Sendable {
        var id: FaultID
        var name: FaultName
        var effect: any FaultEffect
    }

    public let id: ConnectionID
    public let openedAt: Int64
    /// When each side could first send over the simulated link, had the handshake crossed it:
    /// the client once the SYN-ACK came back (one round trip after its SYN), the server once
    /// the client's ACK reached it (half a round trip later). The relay's own sockets connect at
    /// once; without these, a new connection cost no more than a reused one.
    var clientMaySend: Int64
    var serverMaySend: Int64
    let bufferLimit: Int
    let observesHTTP: Bool
    var random: SeededRandom

    public internal(set) var phase = Phase.accepted
    public internal(set) var upstream = Upstream.none
    var client = LegState()
    var server = LegState()
    var up: ShapedDirection<Chunk>
    var down: ShapedDirection<Chunk>
    /// Who ended the connection first and how (the `closed` event).
    var ending: (by: Side, how: CloseKind)?
    /// The HTTP layer ended the connection itself (h2 GOAWAY): its FIN is the relay's in `half_closed`.
    var closedByHTTPLayer = false
    /// After the relay closed the connection, or gave up on upstream: read and discard until the
    /// peers close, so close(2) never finds unread bytes and turns a FIN into a reset.
    var discarding = false
    /// What `dropped` names for the bytes discarded then: the fault that closed the connection
    /// (QA 55: one answer's bytes were logged under `garbage` and then `closing`).
    var discardedFor: FaultName = .closing
    /// A stale connection: dead, though it looks alive; its client's next bytes end it.
    var stale: CloseKind?
    /// Extra delay before the upstream connect (slow-connect).
    var connectDelay: Int64 = 0
    var lastActivity: Int64
    var link: LinkConfiguration

    var faults: [ActiveFault] = []
    /// `bad-cert` in force, or a portal answering this connection's handshake: the upstream is
    /// the relay's own TLS answering with a wrong certificate, and the fault that decided it.
    public var tlsImpersonation: (kind: BadCertificateKind, fault: FaultName)? {
        if let impersonating { return impersonating }
        guard let fault = faults.last(where: { $0.effect.impersonation != nil }), let kind = fault.effect.impersonation else { return nil }
        return (kind, fault.name)
    }
    /// A stand-in chose to answer this connection's TLS with a certificate of its own.
    var impersonating: (kind: BadCertificateKind, fault: FaultName)?
    /// Rules that have acted on this connection (each acts once, whichever path delivered it).
    var appliedFaults: Set<FaultID> = []
    /// The fault whose hook is running, for its log lines and timers.
    var actingFault: FaultName = ""
    var actingFaultID: FaultID?
    /// The time of the event being handled (the event loop's clock).
    public internal(set) var now: Int64
    /// Derived from ``faults``, recomputed when they change.
    var holding: (up: Bool, down: Bool) = (false, false)
    var holdsConnect = false
    var finDelay: (up: Int64, down: Int64) = (0, 0)
    var inspectingBytes = false
    var standIn: (any StandIn)?
    /// What the HTTP observer saw, waiting for its last byte to be written on
    /// (``ConnectionMachine/requestForwarded(_:)``).
    var unsentHTTP: (up: [UnsentHTTP], down: [UnsentHTTP]) = ([], [])
    /// No fault, not stale, not closing: bytes take the fast path when the link allows.
    var isPlain = false

    /// HTTP bookkeeping: client bytes a stand-in parsed so far, requests seen on the connection
    /// (answered by a stand-in or forwarded), answers waiting for their time.
    var standInBytesParsed = 0
    var requestsSeen = 0
    var pendingAnswers: [Int: HTTPRequestSummary] = [:]
    var nextAnswer = 0
    /// A close a stand-in decided on (a portal's RST to a ClientHello), travelling the link.
    var pendingRefusal: StandInRefusal?
    /// A stale connection's close on its way to the client, and the bytes that set it off.
    var pendingStaleClose: (how: CloseKind, swallowed: Int)?

    /// Ask for a ``ConnectionAction/delayed(_:nanoseconds:)`` for every chunk the link model holds
    /// back (metrics' latency histograms); off unless someone listens.
    public var reportsDelays = false

    /// The decisions made so far, for the executor to carry out and clear.
    public var actions: [ConnectionAction<Chunk>] = []

    /// - Parameter linkEpoch: when a traced link's time 0 is (the relay's start, so every
    ///   connection meets the recording at the same moment); nil: when this connection opened.
    /// - Parameter simulatesHandshake: whether the first bytes wait for the simulated handshake
    ///   (``clientMaySend``); off, a connection's bytes count from when they were read.
    public init(id: ConnectionID, openedAt: Int64, link: LinkConfiguration, seed: UInt64,
                bufferLimit: Int, observesHTTP: Bool, linkEpoch: Int64? = nil, simulatesHandshake: Bool = true) {
        self.id = id
        self.openedAt = openedAt
        self.lastActivity = openedAt
        self.now = openedAt
        self.bufferLimit = bufferLimit
        self.observesHTTP = observesHTTP
        self.link = link
        self.random = SeededRandom(seed: seed).derived(id.raw)
        let rtt = link.roundTripNanoseconds
        clientMaySend = simulatesHandshake ? openedAt.addingSaturating(rtt) : openedAt
        serverMaySend = simulatesHandshake ? openedAt.addingSaturating(link.handshakeNanoseconds) : openedAt
        let epoch = linkEpoch ?? openedAt
        up = ShapedDirection(direction: .up, shaper: DirectionShaper(link: link.up, roundTripNanoseconds: rtt, random: random.derived(1), traceEpoch: epoch))
        down = ShapedDirection(direction: .down, shaper: DirectionShaper(link: link.down, roundTripNanoseconds: rtt, random: random.derived(2), traceEpoch: epoch))
        client.active = true
    }

    // MARK: Helpers

    func leg(_ leg: Leg) -> LegState { leg == .client ? client : server }

    mutating func withLeg<R>(_ leg: Leg, _ body: (inout LegState) -> R) -> R {
        leg == .client ? body(&client) : body(&server)
    }

    /// Reads one property of a direction's lane in place (returning the lane would copy it, with
    /// its queue and model, on every read of the hot path).
    func lane<T>(_ direction: Direction, _ property: (borrowing ShapedDirection<Chunk>) -> T) -> T {
        direction == .up ? property(up) : property(down)
    }

    mutating func withLane<R>(_ direction: Direction, _ body: (inout ShapedDirection<Chunk>) -> R) -> R {
        direction == .up ? body(&up) : body(&down)
    }

    mutating func log(_ kind: EventKind) { actions.append(.log(kind)) }

    /// Whether a leg exists to write to (the upstream leg only once connected).
    func hasLeg(_ leg: Leg) -> Bool { leg == .client || upstream == .connected }

    mutating func recomputePlain() {
        isPlain = faults.isEmpty && stale == nil && !discarding && phase == .relaying && !observesHTTP
    }

    // MARK: Events

    /// Events from the upstream leg come only while it is connected: anything else is a bug in
    /// the executor (debug builds stop; release builds ignore the event).
    func expectLeg(_ leg: Leg, _ event: StaticString) -> Bool {
        guard leg == .client || upstream == .connected else {
            assertionFailure("\(event) from the upstream leg while it is \(upstream)")
            return false
        }
        return true
    }

    /// The connection is registered: applies the faults that act on new connections, then
    /// decides the upstream connect. `faults` are the rules that target it, in the order added.
    public mutating func start(faults acceptFaults: [(FaultID, FaultKind)], now: Int64) {
        self.now = now
        for (id, kind) in acceptFaults { apply(kind, id: id, atAccept: true, now: now) }
        beginConnect(now: now)
    }

    /// Bytes read from `leg`.
    /// `arrivedAt` (≤ `now`): when the bytes reached the relay's socket, if known; a delay
    /// and a rate count from then (the relay's read may come later than the bytes: its wake-up).
    public mutating func received(_ chunk: Chunk, from leg: Leg, now: Int64, arrivedAt: Int64? = nil) {
        self.now = now
        guard expectLeg(leg, "bytes") else { return }
        lastActivity = now
        let direction = leg.outgoing
        if discarding || phase == .finished {
            log(.dropped(direction, count: chunk.count, fault: discarding ? discardedFor : .closing))
            // A leg a fault closed (`fin`, `idle-close`, `limit`, `stale=fin`) answers later bytes
            // as a closed socket does: with RST, so the writer's next call fails at once
            // (EPIPE/ECONNRESET), as faults.md says. Before, they were read and dropped for the
            // 10 s grace, and a client's writes kept succeeding. Bytes a fault swallows on
            // purpose (a portal's `tls=hang`, a connect that timed out) leave the output open.
            if discarding, phase != .finished, hasLeg(leg), self.leg(leg).outputClosed { resetLeg(leg) }
            return
        }
        if let mode = stale {
            log(.dropped(direction, count: chunk.count, fault: "stale"))
            if direction == .up, pendingStaleClose == nil {
                actingFault = "stale"
                // The close comes from the far end of the path (the server that closed the
                // socket, the NAT that forgot the mapping): after the bytes' trip up and its own
                // down, as a stand-in's refusal does (QA 68: at once, a 0 ms round trip in the capture).
                let sent = sendTime(.up, now)
                let reached = withLane(.up) { $0.markerReleaseTime(arrivedAt: sent) }
                let due = reached.addingSaturating(max(0, link.down.latency.nanoseconds))
                pendingStaleClose = (mode, chunk.count)
                if due <= now { staleCloseArrived() } else { actions.append(.arm(.staleClose, at: due)) }
            }
            return
        }
        if direction == .up, standIn != nil {
            standInReceived(chunk, now: now)
            return
        }
        if inspectingBytes {
            for index in faults.indices where faults[index].effect.inspectsBytes {
                let verdict = withFault(at: index) { effect, machine in effect.bytes(chunk, direction, on: &machine) }
                if verdict != .pass {
                    return apply(verdict, to: chunk, direction: direction, now: now)
                }
            }
        }
        forward(chunk, direction, now: now, arrivedAt: arrivedAt)
    }

    private mutating func apply(_ verdict: ByteVerdict, to chunk: Chunk, direction: Direction, now: Int64) {
        switch verdict {
        case .pass:
            forward(chunk, direction, now: now)
        case .swallow:
            log(.dropped(direction, count: chunk.count, fault: actingFault))
        case .cut(let keep, let ending):
            let kept = max(0, min(keep, chunk.count))
            if chunk.count > kept { log(.dropped(direction, count: chunk.count - kept, fault: actingFault)) }
            if kept > 0 { forward(kept == chunk.count ? chunk : chunk.slice(0..<kept), direction, now: now) }
            endAfterQueued(direction, ending, now: now)
        case .replace(let bytes, let ending):
            log(.dropped(direction, count: chunk.count, fault: actingFault))
            if !bytes.isEmpty { forward(Chunk(bytes: bytes), direction, now: now) }
            endAfterQueued(direction, ending, now: now)
        }
    }

    /// Ends the connection once the bytes already travelling `direction` have been delivered.
    mutating func endAfterQueued(_ direction: Direction, _ ending: ByteVerdict.Ending, now: Int64) {
        let fault = actingFault
        withLane(direction) { $0.enqueue(.endConnection(fault: fault, how: ending.how, detail: ending.detail), at: now) }
        deliverDue(direction, now: now)
    }

    /// A timer the machine armed fired.
    public mutating func timerFired(_ timer: ConnectionTimer, now: Int64) {
        self.now = now
        guard phase != .finished else { return }
        switch timer {
        case .release(let direction):
            withLane(direction) { $0.timerDeadline = .max }
            deliverDue(direction, now: now)
        case .connect:
            connectUpstream()
        case .connectTimeout:
            upstreamFailed(.timeout, detail: "no SYN got through (loss)")
        case .closeGrace:
            closeLeg(.client)
            if hasLeg(.upstream) { closeLeg(.upstream) }
        case .fault(let id):
            guard let index = faults.firstIndex(where: { $0.id == id }) else { return }
            withFault(at: index) { effect, machine in effect.timerFired(on: &machine) }
        case .answer(let number):
            guard let request = pendingAnswers.removeValue(forKey: number) else { return }
            answer(request, now: now)
        case .refusal:
            refusalArrived()
        case .staleClose:
            staleCloseArrived()
        }
    }

    /// The close a stale connection's bytes set off reaches the client.
    mutating func staleCloseArrived() {
        guard let (how, swallowed) = pendingStaleClose, phase != .finished else { return }
        endClientLeg(how, detail: "swallowed \(swallowed) byte\(swallowed == 1 ? "" : "s") from the client; closing it with \(how.rawValue.uppercased())")
    }
}
