import NetsimCore
import NetsimLink
import NetsimTLS

/// Everything a relay needs to start.
public struct RelayConfiguration: Sendable {
    /// Where clients connect. Loopback unless a person asks otherwise.
    public var listen: Endpoint
    /// Where the relay connects for each client.
    public var upstream: Endpoint
    /// The link model applied to both directions of every connection.
    public var link: LinkConfiguration
    /// Faults active from the start.
    public var faults: [FaultRule]
    /// Seeds every random decision (jitter, loss, fault probabilities).
    public var seed: UInt64
    /// How long an upstream connect may take before the client is shown a timeout.
    /// Defaults to 127 s, when Linux gives up after 6 SYN retries.
    public var connectTimeout: Duration
    /// Bytes a direction may hold (delayed, not yet written) before the relay stops reading
    /// from its source. Reading resumes below half of it. At least 1 (0 is taken as 1).
    public var bufferLimit: Int
    /// Parse HTTP/1.1 framing on every connection and log each request and response
    /// (`httpRequest`, `httpResponse` events). Observation only: the bytes forwarded are never
    /// changed, and a connection whose bytes are not HTTP is left alone after one
    /// `httpUnobserved` event. Off by default; the scenario runner turns it on.
    public var observeHTTP: Bool
    /// Intercept TLS (see ``TLSInterception``); nil: TLS passes through untouched, as any bytes.
    public var tls: TLSInterception?
    /// netsim's CA, for the certificates of `bad-cert` (`expired`, `wrong-host` are issued by it so
    /// that a client trusting it refuses them for that reason alone). Nil: a CA of the relay's own.
    public var authority: CertificateAuthority?
    /// Told how long the link model holds back each chunk (metrics' added-latency histogram).
    /// Nil by default: then the machine does not even measure.
    public var delays: (any DelayObserver)?
    /// On-time release: arm the timers that release delayed bytes early by the wake-up lateness
    /// this machine has shown, and spin the rest of the way to the deadline (``EarlyWakeUp``: at
    /// most 2% of a core per event loop, nothing without delayed bytes); and count a delay from
    /// the kernel's receive time of the bytes, not from the relay's read (``TimedReads``, on
    /// delayed or shaped directions). On by default; off only to measure what it buys
    /// (`netsim bench --only latency` runs both).
    public var preciseRelease: Bool
    /// Forward connections that nothing impairs or observes with splice(2), socket → pipe →
    /// socket, without copying their bytes through the relay; a connection moves to the copy
    /// path the moment a model, fault, tap or HTTP observation applies, and back when lifted
    /// (each switch is a `path` event). Linux only; off by default (opt-in while it proves itself).
    public var splice: Bool
    /// Connections the relay holds open at most; at the limit its listener stops accepting, and
    /// new clients wait in the kernel's listen queue (their connect completes, nothing answers)
    /// until one ends. Nil: as many as the open-file limit leaves room for when the relay starts
    /// (``Relay/defaultConnectionLimit(splice:)``), so the relay never runs out of descriptors.
    /// At least 1 (less is taken as 1).
    public var maximumConnections: Int?
    /// A new connection pays the simulated link's handshake (its first bytes leave a round trip
    /// after the connect, docs/link-models.md#connect). Off for `netsim serve`, whose toxics
    /// keep Toxiproxy's timings: a Toxiproxy proxy connects at once too.
    public var simulatesHandshake: Bool
    /// The relay's clients hold a connection to a proxy (``netsim proxy``'s relays), not to the
    /// upstream itself: a connect that times out closes the client, as the proxy gives up on the
    /// destination, rather than leaving it the silence a SYN that is never answered gives (it
    /// hung until its own timeout, QA 51); and a failed connect names the destination in the log,
    /// one relay's among many.
    public var forProxyClients: Bool

    public init(
        listen: Endpoint = Endpoint(host: "127.0.0.1", port: 0),
        upstream: Endpoint,
        link: LinkConfiguration = .unimpaired,
        faults: [FaultRule] = [],
        seed: UInt64 = 1,
        connectTimeout: Duration = .seconds(127),
        bufferLimit: Int = 4 << 20,
        observeHTTP: Bool = false,
        tls: TLSInterception? = nil,
        authority: CertificateAuthority? = nil,
        delays: (any DelayObserver)? = nil,
        preciseRelease: Bool = true,
        splice: Bool = false,
        maximumConnections: Int? = nil,
        simulatesHandshake: Bool = true,
        forProxyClients: Bool = false
    ) {
        self.simulatesHandshake = simulatesHandshake
        self.forProxyClients = forProxyClients
        self.splice = splice
        self.maximumConnections = maximumConnections
        self.tls = tls
        self.authority = authority
        self.listen = listen
        self.upstream = upstream
        self.link = link
        self.faults = faults
        self.seed = seed
        self.connectTimeout = connectTimeout
        self.bufferLimit = bufferLimit
        self.observeHTTP = observeHTTP
        self.delays = delays
        self.preciseRelease = preciseRelease
    }
}

extension Relay {
    /// How long a proxy's client that ended its side waits for its destination before it is
    /// taken as gone: `printf … | nc -N` ends its side with its request and wants the answer;
    /// a client whose own timeout ran out is let go this soon, not at the connect timeout.
    public static let proxyClientLeaveGrace = Duration.seconds(1)
}
