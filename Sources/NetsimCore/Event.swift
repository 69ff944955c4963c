/// Which way bytes travel through the relay: `up` is client → server, `down` is server → client.
public enum Direction: String, Sendable, CaseIterable, Codable {
    case up, down

    public var reversed: Direction { self == .up ? .down : .up }
}

/// Who did something to a connection.
public enum Side: String, Sendable, Codable {
    case client, upstream, relay
}

/// How a TCP stream ended: a graceful FIN or a reset.
public enum CloseKind: String, Sendable, Codable {
    case fin, rst
}

/// Why the relay could not reach the upstream.
public enum UpstreamFailure: String, Sendable, Codable {
    case refused, timeout, unreachable, other
}

/// Identifies one client connection through the relay, in the order connections were accepted.
public struct ConnectionID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var raw: UInt64
    public init(_ raw: UInt64) { self.raw = raw }
    public var description: String { "#\(raw)" }
    public static func < (a: ConnectionID, b: ConnectionID) -> Bool { a.raw < b.raw }
}

/// One thing that happened during a run, on the run's single timeline.
public struct Event: Sendable, Equatable {
    /// Nanoseconds since the event log's origin (the start of the run).
    public var time: Int64
    /// The connection it concerns, if any.
    public var connection: ConnectionID?
    public var kind: EventKind

    public init(time: Int64, connection: ConnectionID?, kind: EventKind) {
        self.time = time
        self.connection = connection
        self.kind = kind
    }
}

/// What happened. Producers (relay, drivers) add cases; readers (expectations, reports, pcap)
/// switch over them.
public enum EventKind: Sendable, Equatable {
    /// The seed every random decision of this run or relay flows from: with it, an event log
    /// alone says how to reproduce what it records (`--seed N`).
    case seed(UInt64)
    /// The relay accepts connections on this address.
    case listening(address: String)
    /// The relay stopped accepting connections (shut down, or a `refuse` fault closed the listener).
    case listenerClosed(reason: String)
    /// The relay stopped accepting for a while (its connection limit, or an accept that failed);
    /// the listener stays open and new connections wait in the kernel's listen queue.
    case listenerPaused(reason: String)
    /// The relay accepts again after a pause.
    case listenerResumed(reason: String)
    /// A client connected to the relay from this address (nil if its socket no longer knew it).
    case opened(client: Endpoint?)
    /// The relay's connection to the upstream is established.
    case upstreamConnected(upstream: String, after: Int64)
    /// The relay could not connect upstream; the client is shown the same kind of failure.
    case upstreamFailed(reason: UpstreamFailure, detail: String)
    /// Bytes delivered to the far side in this direction (after impairment).
    case bytes(Direction, count: Int)
    /// Bytes a fault swallowed instead of delivering.
    case dropped(Direction, count: Int, fault: FaultName)
    /// A side sent FIN; it was forwarded (after the bytes ahead of it).
    case halfClosed(by: Side)
    /// A fault rule was added to the relay (it acts when its trigger says).
    case faultAdded(fault: FaultName, rule: String)
    /// A fault acted on a connection (or on the listener when `connection` is nil). A fault that
    /// met nothing it acts on says so, its detail holding ``Event/nothingDone``.
    case faultFired(fault: FaultName, detail: String)
    /// A fault stopped acting. `cutShort` says why when its window had not ended (`relay
    /// stopped`): a fault announced "for 10s" gets its end in the log whatever ended it.
    case faultLifted(fault: FaultName, cutShort: String? = nil)
    /// The link model changed.
    case linkChanged(description: String)
    /// The client under test started a request (scenario runs).
    case requestStarted(name: String, index: Int, method: String, path: String)
    /// A request finished: a status, or an error kind; `port` is the client's local port if known.
    case requestFinished(name: String, index: Int, status: Int?, error: String?, port: Int?)
    /// A scenario step fired (fault, clear, link, wait), for the run's timeline.
    case step(description: String)
    /// The relay saw a request head from the client on this connection (HTTP observation).
    /// `reused` is true when it is not the connection's first request. `answeredBy` is nil when
    /// the request went upstream, or the fault that answered it instead (`outage`, `portal`).
    /// `tag` is the request's `X-Netsim-Request` header: scenario runs tag each request, so the
    /// connection that carried it is known even when the client cannot tell its local port.
    /// `stream` is the HTTP/2 stream id (nil for HTTP/1.x).
    case httpRequest(method: String, path: String, reused: Bool, answeredBy: String? = nil, tag: String? = nil, version: HTTPWireVersion = .http1_1, stream: Int? = nil)
    /// A response ended towards the client: its status and body bytes (after de-chunking);
    /// `answeredBy` and `stream` as for ``httpRequest(method:path:reused:answeredBy:tag:version:stream:)``.
    case httpResponse(status: Int, bytes: Int, answeredBy: String? = nil, stream: Int? = nil)
    /// The relay stopped observing HTTP on this connection (not HTTP, TLS, a parse error); the
    /// bytes keep passing untouched.
    case httpUnobserved(reason: String)
    /// The connection's bytes took another path: `splice` (zero-copy, nothing impairs or observes
    /// them) or `copy` (through the relay's buffers, shaped and observed), with why when refused.
    case path(String)
    /// Both legs are closed. `by` is who ended it first, `how` how it ended for the client.
    case closed(by: Side, how: CloseKind, upBytes: Int, downBytes: Int)
    /// A resolver netsim runs was asked for `name` (`type`: A, AAAA, …) over `transport`
    /// (`udp`, `tcp`: the shell's DNS server; `proxy`: the forward proxy's own lookup).
    case dnsQuery(name: String, type: String, transport: String)
    /// What that resolver gave back `after` nanoseconds after the query: the addresses,
    /// `NODATA`, `NXDOMAIN`, `SERVFAIL`, or `no answer` (a `timeout` failure).
    case dnsAnswer(name: String, type: String, result: String, after: Int64)

    /// The event's name in JSON output.
    public var name: String {
        switch self {
        case .seed: "seed"
        case .listening: "listening"
        case .listenerClosed: "listener_closed"
        case .listenerPaused: "listener_paused"
        case .listenerResumed: "listener_resumed"
        case .opened: "opened"
        case .upstreamConnected: "upstream_connected"
        case .upstreamFailed: "upstream_failed"
        case .bytes: "bytes"
        case .dropped: "dropped"
        case .halfClosed: "half_closed"
        case .faultAdded: "fault_added"
        case .faultFired: "fault"
        case .faultLifted: "fault_lifted"
        case .linkChanged: "link_changed"
        case .requestStarted: "request"
        case .requestFinished: "response"
        case .step: "step"
        case .httpRequest: "http_request"
        case .httpResponse: "http_response"
        case .httpUnobserved: "http_unobserved"
        case .path: "path"
        case .closed: "closed"
        case .dnsQuery: "dns_query"
        case .dnsAnswer: "dns_answer"
        }
    }
}

extension Event {
    /// In a `fault` event's detail: the fault met nothing it acts on (an HTTP/2 fault on
    /// HTTP/1.1, `cut` on a stream that is not HTTP/1, a rule for open connections with none
    /// open). Reports tell such a fault from one that acted.
    public static let nothingDone = "nothing done"
}
