import NetsimCore
import NetsimRoutes
import NetsimLink
import NetsimFaults

/// A parsed, validated scenario: a link, a timeline of requests and faults, and the recovery
/// the client must show. Produced by ``ScenarioParser``; run by NetsimRunner.
public struct Scenario: Sendable {
    /// The file it came from, as given.
    public var file: String
    /// The file's lines, for quoting in diagnostics and failed expectations.
    public var sourceLines: [String]
    public var name: String
    /// The real incident it reproduces.
    public var description: String
    public var seed: UInt64
    public var upstream: UpstreamSpec
    /// The baseline link (profile with explicit settings applied).
    public var link: LinkConfiguration
    /// `link: { tls: intercept }`: the relay terminates TLS with netsim's CA and sees the HTTP
    /// inside (docs/tls.md); otherwise TLS passes through untouched.
    public var interceptTLS: Bool
    public var client: ClientSpec
    public var timeline: [TimelineStep]
    public var expectations: [Expectation]
    /// The `dns:` block (see ``ScenarioDNS``); nil without one.
    public var dns: ScenarioDNS?
    /// `link: { mode: … }`: a relay (the default) or a packet path.
    public var linkMode = LinkMode.relay
    /// The packet-only settings of `link:` (packet mode).
    public var packetLink = PacketLinkSettings()

    public init(
        file: String, sourceLines: [String], name: String, description: String, seed: UInt64,
        upstream: UpstreamSpec, link: LinkConfiguration, interceptTLS: Bool = false, client: ClientSpec,
        timeline: [TimelineStep], expectations: [Expectation]
    ) {
        self.interceptTLS = interceptTLS
        self.file = file
        self.sourceLines = sourceLines
        self.name = name
        self.description = description
        self.seed = seed
        self.upstream = upstream
        self.link = link
        self.client = client
        self.timeline = timeline
        self.expectations = expectations
    }
}

/// The client under test and its settings.
public struct ClientSpec: Equatable, Sendable {
    /// `exec`, or an in-process driver's name.
    public var driver: String
    /// For `exec`: the program and its arguments.
    public var command: [String]
    /// Give up on a request after this long (whole request).
    public var timeout: Duration?
    public var connectTimeout: Duration?
    /// Most pooled connections per host.
    public var pool: Int?
    /// Retries the client may make on its own.
    public var retries: Int?
    /// Other driver settings, passed through as text.
    public var settings: [String: String]
    public var location: SourceLocation

    public init(
        driver: String, command: [String] = [], timeout: Duration? = nil, connectTimeout: Duration? = nil,
        pool: Int? = nil, retries: Int? = nil, settings: [String: String] = [:], location: SourceLocation
    ) {
        self.driver = driver
        self.command = command
        self.timeout = timeout
        self.connectTimeout = connectTimeout
        self.pool = pool
        self.retries = retries
        self.settings = settings
        self.location = location
    }
}

/// One step of the timeline. A step with `at` starts that long after the scenario started;
/// one without starts when the step before it has finished (its requests completed).
public struct TimelineStep: Equatable, Sendable {
    public var at: Duration?
    public var action: Action
    public var location: SourceLocation

    public init(at: Duration?, action: Action, location: SourceLocation) {
        self.at = at
        self.action = action
        self.location = location
    }

    public enum Action: Equatable, Sendable {
        case request(RequestStep)
        /// Add a relay fault; `name` lets a later `clear` lift it.
        case fault(name: String?, rule: FaultRule)
        /// Lift the named faults (every fault when `names` is empty: `clear: all`).
        case clear(names: [String])
        /// Replace the link model from now on.
        case link(LinkConfiguration)
        /// Pause.
        case wait(Duration)
        /// The user signs in at the captive portal: every `portal` fault lifts.
        case login
    }
}

/// Requests the driver sends: `count` of them, at most `parallel` in flight at once; or, with
/// `every`, one each `every` from the step's start whether or not the ones before have
/// finished (a polling timer).
public struct RequestStep: Equatable, Sendable {
    public var name: String
    public var method: String
    public var path: String
    public var headers: [HTTPHeader]
    public var body: String?
    public var count: Int
    public var parallel: Int
    public var every: Duration?

    public init(name: String, method: String = "GET", path: String, headers: [HTTPHeader] = [], body: String? = nil, count: Int = 1,
                parallel: Int = 1, every: Duration? = nil) {
        self.name = name
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.count = count
        self.parallel = parallel
        self.every = every
    }
}

/// One item of `expect:`: a subject and the checks that must hold for it.
public struct Expectation: Equatable, Sendable {
    public var subject: Subject
    public var checks: [LocatedCheck]
    public var location: SourceLocation
    /// Whose behaviour the checks judge (`judges:`; default the library's).
    public var judges: Judged

    public init(subject: Subject, checks: [LocatedCheck], location: SourceLocation, judges: Judged = .library) {
        self.subject = subject
        self.checks = checks
        self.location = location
        self.judges = judges
    }

    /// What a check holds to account, so a library author reads verdicts fairly: what the HTTP
    /// library does by itself with its defaults, or an application policy on top of it (captive
    /// portal detection, honouring `Retry-After`, back-off between retries) that a library need
    /// not have. Reports and the client matrix show the two apart (docs/scenario-format.md).
    public enum Judged: String, Equatable, Sendable, CaseIterable {
        case library, policy
    }

    public enum Subject: Equatable, Sendable {
        /// Every instance of a named request.
        case request(String)
        /// Every request started at or after this time.
        case requestsAfter(Duration)
        /// What the built-in server received (optionally filtered).
        case server(method: String?, path: String?)
        /// What the relay observed.
        case relay
        /// The client's process (an exec client): not written in scenarios; the runner judges
        /// its end (``Check/exitedCleanly``) at the `client:` entry.
        case client
    }
}

public struct LocatedCheck: Equatable, Sendable {
    public var check: Check
    public var location: SourceLocation
    public init(_ check: Check, location: SourceLocation) {
        self.check = check
        self.location = location
    }
}

/// A condition over request outcomes or observations.
public enum Check: Equatable, Sendable {
    // Over request outcomes (subjects .request / .requestsAfter):
    case status(Int)
    case body(BodyCheck)
    /// Each request was answered with headers that match, every one of them.
    case headers([HeaderCheck])
    case error(ErrorExpectation)
    /// Each request finished — answered or failed — within this long (pair with `error: none`
    /// for "succeeded within").
    case within(Duration)
    /// Each request went over a relay connection opened after the subject began (`new`: after
    /// the first request of that name started, or after the `after:` time), or over one that
    /// was already open then (`reused`) — e.g. a pooled connection from before a fault.
    case connection(ConnectionUse)
    /// How many requests the subject covers.
    case requestCount(CountRange)
    /// Every request failed with an error message that matches (a request that succeeded, or
    /// failed without a message, does not) — e.g. `captive portal: …`.
    case errorMessage(TextMatch)
    // Over the built-in server (subject .server):
    case serverCount(CountRange)
    // Over the client's process (subject .client, the runner's own):
    /// An exec client exited with status 0 once its stdin closed (docs/drivers.md, "End").
    case exitedCleanly
    /// An exec client answered every request itself (none got netsim's stand-in answer).
    case answeredEveryRequest
    // Over the relay (subject .relay):
    /// Connections the relay accepted in a window.
    case newConnections(TimeWindow, CountRange)
    /// Connection attempts in a window: each gap at least `minimumGrowth` × the previous one,
    /// and no more than `maximumPerSecond` attempts in any one-second span.
    case attempts(TimeWindow, minimumGrowth: Double?, maximumPerSecond: Double?)
    /// Bytes delivered in a direction (both when nil) in a window.
    case bytes(Direction?, TimeWindow, CountRange)
    /// HTTP requests the relay saw from the client that match the filter: how many (`nil`: any
    /// number), and, with `minimumInterval`, every gap between consecutive ones (by time) at
    /// least that long — e.g. that a client honours `Retry-After` or backs off.
    case httpRequests(HTTPRequestFilter, CountRange?, minimumInterval: Duration?)
    /// HTTP responses the relay saw go to the client that match the filter: how many.
    case httpResponses(HTTPResponseFilter, CountRange)
}

/// Which of the HTTP requests the relay observed a `requests:` check counts.
public struct HTTPRequestFilter: Equatable, Sendable {
    /// Any method when nil.
    public var method: String?
    /// Any request target when nil.
    public var path: PathPattern?
    public var window: TimeWindow
    public var answeredBy: Answerer

    public init(method: String? = nil, path: PathPattern? = nil, window: TimeWindow = TimeWindow(), answeredBy: Answerer = .any) {
        self.method = method
        self.path = path
        self.window = window
        self.answeredBy = answeredBy
    }
}

/// Which of the HTTP responses the relay observed a `responses:` check counts.
public struct HTTPResponseFilter: Equatable, Sendable {
    /// Any status when nil.
    public var status: Int?
    public var window: TimeWindow
    public var answeredBy: Answerer

    public init(status: Int? = nil, window: TimeWindow = TimeWindow(), answeredBy: Answerer = .any) {
        self.status = status
        self.window = window
        self.answeredBy = answeredBy
    }
}

/// A request target as written in a check: exact, or a prefix when it ends in `*` (`/api/*`).
public enum PathPattern: Equatable, Sendable, CustomStringConvertible {
    case exact(String)
    case prefix(String)

    /// `/api/*` is the prefix `/api/`; anything else is matched exactly.
    public init(_ written: String) {
        self = written.hasSuffix("*") ? .prefix(String(written.dropLast())) : .exact(written)
    }

    public func matches(_ target: String) -> Bool {
        switch self {
        case .exact(let path): target == path
        case .prefix(let prefix): target.hasPrefix(prefix)
        }
    }

    /// As written: `/orders`, `/api/*`.
    public var description: String {
        switch self {
        case .exact(let path): path
        case .prefix(let prefix): prefix + "*"
        }
    }
}

/// Who answered an HTTP request the relay observed: the upstream, or a relay fault instead.
public enum Answerer: Equatable, Sendable {
    /// Either.
    case any
    /// The request went upstream; the response came from the upstream.
    case upstream
    /// Any fault answered it (`outage`, `portal`).
    case relay
    /// This fault answered it.
    case fault(String)

    /// Whether an event's `answeredBy` (nil: the upstream) is this.
    public func matches(_ answeredBy: String?) -> Bool {
        switch self {
        case .any: true
        case .upstream: answeredBy == nil
        case .relay: answeredBy != nil
        case .fault(let name): answeredBy == name
        }
    }
}

/// A condition on text (an error message).
public enum TextMatch: Equatable, Sendable {
    case startsWith(String)
    case contains(String)

    public func matches(_ text: String) -> Bool {
        switch self {
        case .startsWith(let prefix): text.hasPrefix(prefix)
        case .contains(let part): text.contains(part)
        }
    }
}

public enum ErrorExpectation: Equatable, Sendable {
    case none
    case any
    case kind(ErrorKind)
}

/// A client error, normalized across drivers.
public enum ErrorKind: String, CaseIterable, Equatable, Sendable, Codable {
    case refused
    case reset
    case closedBeforeResponse = "closed-before-response"
    case timeout
    case tls
    case dns
    case other
}

public enum ConnectionUse: String, Equatable, Sendable {
    case new, reused
}

/// `[from, to)` in scenario time; either end open.
public struct TimeWindow: Equatable, Sendable {
    public var from: Duration?
    public var to: Duration?
    public init(from: Duration? = nil, to: Duration? = nil) {
        self.from = from
        self.to = to
    }
    public func contains(_ nanoseconds: Int64) -> Bool {
        (from.map { nanoseconds >= $0.nanoseconds } ?? true) && (to.map { nanoseconds < $0.nanoseconds } ?? true)
    }

    /// True when `[start, end)` and the window share a moment.
    public func overlaps(_ start: Int64, _ end: Int64) -> Bool {
        (from.map { end > $0.nanoseconds } ?? true) && (to.map { start < $0.nanoseconds } ?? true)
    }
}

/// `count: N` (exactly), or `min:`/`max:`.
public struct CountRange: Equatable, Sendable, CustomStringConvertible {
    public var minimum: Int?
    public var maximum: Int?
    public init(minimum: Int? = nil, maximum: Int? = nil) {
        self.minimum = minimum
        self.maximum = maximum
    }
    public static func exactly(_ n: Int) -> CountRange { CountRange(minimum: n, maximum: n) }
    public func contains(_ n: Int) -> Bool { (minimum.map { n >= $0 } ?? true) && (maximum.map { n <= $0 } ?? true) }
    public var description: String {
        switch (minimum, maximum) {
        case let (a?, b?) where a == b: "exactly \(a)"
        case let (a?, b?): "between \(a) and \(b)"
        case let (a?, nil): "at least \(a)"
        case let (nil, b?): "at most \(b)"
        case (nil, nil): "any number"
        }
    }

    /// The range with its noun, singular where the bound is 1: "exactly 1 request", "at most 2
    /// requests", "any number of requests". `plural` defaults to `singular` + "s".
    public func of(_ singular: String, plural: String? = nil) -> String {
        let plural = plural ?? singular + "s"
        switch (minimum, maximum) {
        case let (a?, b?) where a == b: return "\(self) \(a == 1 ? singular : plural)"
        case (1, nil), (nil, 1): return "\(self) \(singular)"
        case (nil, nil): return "any number of \(plural)"
        default: return "\(self) \(plural)"
        }
    }
}
