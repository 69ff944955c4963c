import NetsimCore

/// A leg of a relayed connection: the client's socket or the one to upstream.
public enum Leg: Sendable, Hashable {
    case client, upstream

    public var side: Side { self == .client ? .client : .upstream }
    public var other: Leg { self == .client ? .upstream : .client }
    /// The direction bytes read from this leg travel in.
    public var outgoing: Direction { self == .client ? .up : .down }
    /// The leg bytes travelling `direction` are written to.
    public static func destination(_ direction: Direction) -> Leg { direction == .up ? .upstream : .client }
}

/// Timers a connection asks its executor to arm; each is armed at most once at a time.
public enum ConnectionTimer: Hashable, Sendable {
    /// The next release of a shaped direction.
    case release(Direction)
    /// The upstream connect, after the delays faults and SYN loss ask for.
    case connect
    /// An upstream connect that never gets through (every SYN lost).
    case connectTimeout
    /// Legs closed by a fault are closed fully after a grace period.
    case closeGrace
    /// A fault's own timer (idle-close).
    case fault(FaultID)
    /// A stand-in answers a request when it would have reached the server.
    case answer(Int)
    /// A stand-in's close of bytes it refuses reaches the client (``ConnectionMachine/pendingRefusal``).
    case refusal
    /// A stale connection's close reaches the client, a round trip after its bytes
    /// (``ConnectionMachine/pendingStaleClose``).
    case staleClose
}

/// What a ``ConnectionMachine`` asks its executor (the relay's channel handlers) to do, in order.
public enum ConnectionAction<Chunk: ByteChunk>: Sendable {
    /// Write bytes to a leg (flushed by ``flush(_:)``).
    case write(Leg, Chunk)
    case flush(Leg)
    /// Send FIN after every byte already written.
    case shutdownOutput(Leg)
    /// Close with RST, dropping anything unsent.
    case reset(Leg)
    /// Close with RST once every byte already written to the leg has reached the peer: a fault
    /// that ends an answer after the bytes it keeps (`cut=BYTES,rst`), which must arrive.
    case resetAfterSent(Leg)
    /// Close both directions now.
    case close(Leg)
    /// Let the leg's socket be read, or hold its reads back (backpressure, faults).
    case setReads(Leg, Bool)
    /// Start connecting upstream; report with `upstreamConnected` or `upstreamFailed`.
    case connectUpstream
    case arm(ConnectionTimer, at: Int64)
    case cancel(ConnectionTimer)
    /// Record an event (at the machine's `now`).
    case log(EventKind)
    /// The link model holds a chunk travelling `direction` back this long (only when
    /// ``ConnectionMachine/reportsDelays`` is set): not an event, so the event log stays small.
    case delayed(Direction, nanoseconds: Int64)
    /// The peer on a leg ended its side (for taps: pcap shows who sent what).
    case peerEnded(Leg, CloseKind)
    /// While a stand-in acts: feed the client's bytes to the HTTP request parser, which reports
    /// each complete request with `requestReceived` (or `requestUnparseable`).
    case parseRequests(Chunk)
    /// The stand-in lifted: forget any partly parsed request.
    case stopParsingRequests
    /// HTTP observation: bytes forwarded in this direction, and the end of a direction.
    case observe(Direction, Chunk)
    case observeEnded(Direction)
    /// Both legs are closed; the executor drops the connection.
    case finished
}
