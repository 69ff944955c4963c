import NetsimCore

/// A connection fault the relay can inject. The same set is used by `netsim relay --fault`,
/// scenario timelines and the control API.
public enum FaultKind: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// New connections are refused (the listener closes, so the kernel answers SYNs with RST).
    case refuse
    /// Accept each new connection and reset it at once (a firewall's REJECT with tcp-reset after
    /// the handshake, a load balancer with no healthy backend). Unlike `refuse`, the relay sees
    /// every attempt, so a scenario can judge how a client spaces its retries.
    case reject
    /// Accept, never answer, never close: bytes vanish both ways.
    case blackhole
    /// Graceful close (FIN) of both legs now.
    case fin
    /// Reset (RST) both legs now.
    case rst
    /// The connection looks alive; the next bytes the client sends are swallowed and the relay
    /// closes the client leg with FIN or RST (lock screen, NAT timeout).
    case stale(CloseKind)
    /// Close (FIN) a connection that has been silent for this long (server keep-alive timeout).
    case idleClose(Duration)
    /// Close both legs after this many more bytes downstream.
    case limit(bytes: Int)
    /// Delay the upstream connect by this long.
    case slowConnect(Duration)
    /// Hold back each FIN this long after the bytes ahead of it (Toxiproxy's slow_close).
    case slowClose(Duration)
    /// The relay answers HTTP requests itself instead of forwarding them upstream (a server
    /// outage): new connections never connect upstream; on open ones the next request is
    /// answered by the relay.
    case outage(OutageKind)
    /// A captive portal: the relay answers plain-HTTP requests itself with a redirect to a login
    /// page or the page itself (connectivity probes included) and breaks TLS; lifted by a
    /// `login` (or by removing the fault), after which requests go upstream again.
    case portal(PortalSettings)

    /// The fault's name as written on the command line.
    public var name: String {
        switch self {
        case .refuse: "refuse"
        case .reject: "reject"
        case .blackhole: "blackhole"
        case .fin: "fin"
        case .rst: "rst"
        case .stale: "stale"
        case .idleClose: "idle-close"
        case .limit: "limit"
        case .slowConnect: "slow-connect"
        case .slowClose: "slow-close"
        case .outage: "outage"
        case .portal: "portal"
        }
    }

    public var description: String {
        switch self {
        case .stale(let how): "stale=\(how.rawValue)"
        case .idleClose(let d): "idle-close=\(d.compactDescription)"
        case .limit(let n): "limit=\(n)"
        case .slowConnect(let d): "slow-connect=\(d.compactDescription)"
        case .slowClose(let d): "slow-close=\(d.compactDescription)"
        case .outage(let kind): "outage=\(kind.rawValue)"
        case .portal(let settings): settings.description
        default: name
        }
    }

    /// Every fault name, for help texts and "did you mean".
    public static let names = ["refuse", "reject", "blackhole", "fin", "rst", "stale", "idle-close", "limit", "slow-connect", "slow-close", "outage", "portal"]

    public static let allowedForms =
        "one of refuse, reject, blackhole, fin, rst, stale[=fin|rst], idle-close=DURATION, limit=BYTES, slow-connect=DURATION, slow-close=DURATION, outage=503|500|error-page|truncated|no-headers, portal[=redirect|page][,tls=reset|close|hang] (e.g. stale=rst, idle-close=5s, limit=10KB, slow-connect=2s, slow-close=1s, portal=page,tls=close)"

    /// Parses `KIND[=ARG]`, e.g. `stale=rst`, `idle-close=5s`, `limit=10KB`.
    public init(parsing text: String) throws {
        let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
        let kind = parts.first ?? ""
        let argument = parts.count > 1 ? parts[1] : nil
        func fail(_ detail: String? = nil) -> UnitParseError {
            UnitParseError(input: text, expected: detail ?? "a fault", allowedForms: FaultKind.allowedForms)
        }
        func required() throws -> String {
            guard let argument, !argument.isEmpty else { throw fail("a complete fault (\(kind) needs a value)") }
            return argument
        }
        switch kind {
        case "refuse", "reject", "blackhole", "fin", "rst":
            guard argument == nil else { throw fail("a fault (\(kind) takes no value)") }
            self = ["refuse": .refuse, "reject": .reject, "blackhole": .blackhole, "fin": .fin][kind] ?? .rst
        case "stale":
            switch argument {
            case nil, "rst": self = .stale(.rst)
            case "fin": self = .stale(.fin)
            default: throw fail("a stale close (stale=fin or stale=rst)")
            }
        case "idle-close": self = .idleClose(try Duration(parsing: try required()))
        case "limit": self = .limit(bytes: try ByteCount(parsing: try required()).bytes)
        case "slow-connect": self = .slowConnect(try Duration(parsing: try required()))
        case "slow-close": self = .slowClose(try Duration(parsing: try required()))
        case "outage":
            guard let outage = OutageKind(rawValue: try required()) else {
                throw fail("an outage (outage=503, 500, error-page, truncated or no-headers)")
            }
            self = .outage(outage)
        case "portal":
            guard let argument else {
                self = .portal(PortalSettings())
                return
            }
            guard let settings = PortalSettings(parsing: argument) else {
                throw fail("a captive portal (\(PortalSettings.allowedForms))")
            }
            self = .portal(settings)
        default: throw fail()
        }
    }

    /// Faults that act when a connection is accepted, not on connections already open.
    var actsOnlyAtAccept: Bool {
        switch self {
        case .refuse, .reject, .slowConnect: true
        default: false
        }
    }
}

extension FaultKind {
    /// The fault answers HTTP requests itself instead of upstream (`outage`, `portal`).
    var standIn: StandIn? {
        switch self {
        case .outage(let kind): .outage(kind)
        case .portal(let settings): .portal(settings)
        default: nil
        }
    }

    public var isPortal: Bool {
        if case .portal = self { return true }
        return false
    }
}

/// What answers a connection's requests while an `outage` or `portal` fault acts.
enum StandIn: Equatable {
    case outage(OutageKind)
    case portal(PortalSettings)

    var faultName: String {
        switch self {
        case .outage: "outage"
        case .portal: "portal"
        }
    }
}

/// How the relay answers requests during an `outage` fault.
public enum OutageKind: String, Sendable, CaseIterable {
    /// `503 Service Unavailable` with `Retry-After: 2`.
    case serviceUnavailable = "503"
    /// `500 Internal Server Error`.
    case internalError = "500"
    /// `200 OK` with an HTML error page, `Last-Modified` a year ago and no `Cache-Control`: a
    /// heuristic cache keeps it (the cache-poisoning incident).
    case errorPage = "error-page"
    /// `200 OK` whose body stops short of its `Content-Length`, then FIN.
    case truncated
    /// The request is accepted and the response headers never come.
    case noHeaders = "no-headers"
}

/// Which connections a fault applies to, relative to the moment it activates.
public enum FaultTarget: String, Sendable, CaseIterable {
    /// Connections open when it activates and those opened afterwards.
    case all
    /// Only connections opened after it activates.
    case new
    /// Only connections open when it activates.
    case existing
}

/// When a fault acts.
public enum FaultTrigger: Equatable, Sendable {
    /// As soon as it is added.
    case immediately
    /// This long after the relay started.
    case at(Duration)
    /// This long after each connection opened (for a connection already open when the rule is
    /// added: this long after it was added).
    case after(Duration)
}

/// A fault with its timing, targets and probability.
public struct FaultRule: Equatable, Sendable, CustomStringConvertible {
    public var kind: FaultKind
    public var trigger: FaultTrigger
    public var target: FaultTarget
    /// Each targeted connection is affected with this probability (decided from the relay's seed).
    public var probability: Probability
    /// Lift the fault this long after it activates (nil: it stays until removed).
    public var lasts: Duration?

    public init(
        _ kind: FaultKind, trigger: FaultTrigger = .immediately, target: FaultTarget = .all,
        probability: Probability = .certain, lasts: Duration? = nil
    ) {
        self.kind = kind
        self.trigger = trigger
        self.target = target
        self.probability = probability
        self.lasts = lasts
    }

    /// Checks combinations that cannot mean anything; the message says what to write instead.
    public func validate() throws {
        if kind.actsOnlyAtAccept {
            if target == .existing {
                throw FaultRuleError("\(kind.name) acts on new connections only; use --fault-target all or new")
            }
            if case .after = trigger {
                throw FaultRuleError("\(kind.name) acts when a connection is accepted; use --fault-at instead of --fault-after")
            }
        }
        if case .after = trigger, target == .new {
            // Meaningful: only connections opened after the rule was added.
        }
    }

    public var description: String {
        var text = kind.description
        switch trigger {
        case .immediately: break
        case .at(let d): text += " at \(d.compactDescription)"
        case .after(let d): text += " after \(d.compactDescription) per connection"
        }
        if target != .all { text += " on \(target.rawValue) connections" }
        if probability.fraction < 1 { text += " with probability \(probability)" }
        if let lasts { text += " for \(lasts.compactDescription)" }
        return text
    }
}

/// A fault rule that cannot be applied as written.
public struct FaultRuleError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Identifies a fault added to a running relay, to remove it later.
public struct FaultID: Hashable, Sendable, CustomStringConvertible {
    public var raw: UInt64
    public var description: String { "fault#\(raw)" }
}
