import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NetsimAccept
import NetsimCore
import NetsimLink
import NetsimRelay
import NetsimTLS

/// An HTTP forward proxy (`netsim proxy`): absolute-form requests (`GET http://host/path`) and
/// CONNECT tunnels. Each destination gets a netsim ``Relay`` without a listener; once a client's
/// request head is read, its connection is adopted by that relay (``Relay/adopt(_:connector:)``),
/// so the link model and faults act per connection and a proxied connection holds exactly two
/// sockets: the client's and the one to the destination. CONNECT tunnels are carried byte for
/// byte, never decrypted.
///
/// Plain HTTP requests are sent with `Connection: close`: one request per client connection,
/// so a keep-alive connection can never carry a request to a second host through the first's relay.
///
/// Without a stand-in fault the proxy connects the destination first, so that an unreachable one
/// gets `502 Bad Gateway`, then hands the connected channel to the relay (``ConnectedUpstream``).
/// With an `outage` or `portal` fault among the faults, the proxy never resolves or connects a
/// destination itself: the relay answers plain HTTP (and a portal breaks TLS in CONNECT tunnels)
/// without any upstream, and the destination is resolved and connected only when the relay
/// connects upstream — when no stand-in answers for the connection (``HostConnector``); an
/// unreachable destination then resets the client, as a refused connect does.
// `@unchecked Sendable`: mutable state (listener, relays) is behind `lock`.
public final class ForwardProxy: @unchecked Sendable {
    public struct Configuration: Sendable {
        public var listen: Endpoint
        public var link: LinkConfiguration
        public var faults: [FaultRule]
        public var seed: UInt64
        /// Clients other than loopback ones are accepted only from these networks.
        public var allow: [AddressRange]
        /// Intercept CONNECT tunnels (`--tls intercept`): for each destination, an interception
        /// that verifies it by its name. Nil: tunnels stay opaque.
        public var interception: (@Sendable (Endpoint) throws -> TLSInterception)?
        /// Delay and failures applied to the proxy's own lookups of destination names (see ``ProxyLookup``).
        public var dns: DNSFaults
        /// How long a lookup under `dns`'s `timeout` failure waits before the proxy answers 504.
        public var dnsTimeout: Duration
        /// The most client connections open at once (each holds two descriptors); more wait in the
        /// listen queue. nil: what the open-file limit allows (``Relay/defaultConnectionLimit(splice:)``).
        public var maximumConnections: Int?
        /// How long a client may take to send its whole request head; then `408 Request
        /// Timeout` and a close (nginx's `client_header_timeout` is 60 s too). Without it,
        /// clients that send half a head and wait held `--max-connections` places for good.
        public var headTimeout: Duration
        /// netsim's CA, for `bad-cert`'s certificates (``RelayConfiguration/authority``).
        public var authority: CertificateAuthority?
        /// How long the proxy waits for a destination: its TCP connect (then `504 Gateway
        /// Timeout`) and, in an intercepted tunnel, its TLS handshake (then the client's session
        /// with netsim is closed). 60 s, as nginx's `proxy_connect_timeout` and Squid's
        /// `connect_timeout`; a relay's 127 s (the kernel's SYN retries) is what a client sees
        /// connecting by itself, not through a proxy.
        public var connectTimeout: Duration

        public init(listen: Endpoint = Endpoint(host: "127.0.0.1", port: 0), link: LinkConfiguration = .unimpaired,
                    faults: [FaultRule] = [], seed: UInt64 = 1, allow: [AddressRange] = [],
                    interception: (@Sendable (Endpoint) throws -> TLSInterception)? = nil,
                    dns: DNSFaults = .none, dnsTimeout: Duration = .seconds(5), maximumConnections: Int? = nil,
                    headTimeout: Duration = .seconds(60), authority: CertificateAuthority? = nil,
                    connectTimeout: Duration = .seconds(60)) {
            self.connectTimeout = connectTimeout
            self.headTimeout = headTimeout
            self.authority = authority
            self.interception = interception
            self.maximumConnections = maximumConnections
            self.dns = dns
            self.dnsTimeout = dnsTimeout
            self.listen = listen
            self.link = link
            self.faults = faults
            self.seed = seed
            self.allow = allow
        }
    }

    public let configuration: Configuration
    /// Every relay's events (one relay per destination).
    public let eventLog: EventLog
    let lookup: ProxyLookup
    let group: MultiThreadedEventLoopGroup
    /// The destinations' relays share it: faults count from the proxy's start, and connection
    /// ids are the proxy's, not a destination's.
    private let timeline = RelayTimeline()
    private let lock = NIOLock()
    private var listener: (any Channel)?
    /// Client connections no relay has taken over yet (reading their head, waiting for a lookup or
    /// a CONNECT's answer), and the proxy's own connects to destinations until then (one to a
    /// destination that does not answer stays pending): `stop()` closes them before the event
    /// loops go. Left to the loops'
    /// shutdown, their close scheduled work on a loop already gone (SwiftNIO's "Cannot schedule
    /// tasks on an EventLoop that has already shut down", printed at every Ctrl-C that found an
    /// idle client, such as a browser's preconnect).
    private var waiting: [ObjectIdentifier: any Channel] = [:]
    /// One relay per destination, and per kind: tunnels (intercepted when asked) and plain HTTP.
    private var relays: [RelayKey: Task<Relay, any Error>] = [:]
    /// The relays of ``relays`` that have started, for ``startedRelay(to:tunnel:)``.
    private var started: [RelayKey: Relay] = [:]
    /// `stop()` has begun: no relay starts and no connection is tracked from then on — both
    /// would outlive the event loops (a CONNECT read while Ctrl-C stopped the proxy started a
    /// relay no one stopped, and its work went to loops already shut down).
    private var stopping = false

    /// What a connection meets when the proxy stops while it waits for its relay.
    struct Stopping: Error, CustomStringConvertible {
        var description: String { "the proxy is stopping" }
    }

    /// True once ``stop()`` has begun.
    var isStopping: Bool { lock.withLock { stopping } }

    struct RelayKey: Hashable {
        var destination: Endpoint
        var tunnel: Bool
    }

    /// True when a fault may answer in the destination's place (`outage`, `portal`): then a
    /// destination is resolved and connected only when its relay connects upstream.
    var mayStandIn: Bool {
        configuration.faults.contains { $0.kind.scope == .request }
    }

    public init(configuration: Configuration, eventLog: EventLog = EventLog(), threads: Int = System.coreCount) {
        self.configuration = configuration
        self.eventLog = eventLog
        lookup = ProxyLookup(faults: configuration.dns, timeout: configuration.dnsTimeout, eventLog: eventLog)
        self.group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, threads))
    }

    @discardableResult
    public func start() async throws -> Endpoint {
        for rule in configuration.faults { try rule.validate() }
        let log = eventLog
        let gate = ConnectionGate(limit: connectionLimit) { paused, open in
            log.record(paused ? .listenerPaused(reason: "\(counted(open, "client connection")) open, the proxy's limit; new clients wait in the listen queue until one ends")
                              : .listenerResumed(reason: "\(counted(open, "client connection")) open, under the proxy's limit"))
        }
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(ChannelOptions.backlog, value: 4096)
            .serverChannelInitializer { channel in  // out of descriptors, an accept waits 1 s, not spins
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(AcceptBackoff(onPause: { error, _ in
                        log.record(.listenerPaused(reason: AcceptBackoff.pauseReason(error)))
                    }, resume: { _ in gate.resume() },
                    onRecover: { log.record(.listenerResumed(reason: "an accept succeeded again after descriptors ran out")) }))
                    try channel.pipeline.syncOperations.addHandler(gate)
                }
            }
            .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    waitingForRelay(channel)
                    try channel.pipeline.syncOperations.addHandler(ProxyRequestHandler(proxy: self))
                }
            }
            .bind(host: configuration.listen.host, port: configuration.listen.port)
            .get()
        lock.withLock { listener = channel }
        // The faults' own events are the proxy's, once each, not each destination relay's.
        timeline.announce(configuration.faults, to: eventLog, on: group.next())
        // The address bound, not the name asked for (QA 66: `--listen vm:0`, a name for
        // 127.0.0.1, was called "NOT a loopback address").
        let bound = Endpoint(host: channel.localAddress?.ipAddress ?? configuration.listen.host, port: channel.localAddress?.port ?? configuration.listen.port)
        // As the relay's log begins and ends (QA 66: the proxy's had neither).
        eventLog.record(.listening(address: bound.description))
        return bound
    }

    public func stop() async {
        let (channel, tasks) = lock.withLock { () -> ((any Channel)?, [Task<Relay, any Error>]) in
            stopping = true
            defer {
                listener = nil
                relays.removeAll()
                started.removeAll()
            }
            return (listener, Array(relays.values))
        }
        try? await channel?.close()
        for client in lock.withLock({ Array(waiting.values) }) { try? await client.close() }
        for task in tasks {
            if let relay = try? await task.value { await relay.stop() }
        }
        if channel != nil { eventLog.record(.listenerClosed(reason: "proxy stopped")) }
        timeline.cancel()  // after the connections' last events, which may still name a fault (QA 46)
        try? await group.shutdownGracefully()
    }

    /// Tracks `channel` (a client's, or the proxy's to a destination) until a relay takes it
    /// over (``handedToRelay(_:)``) or it closes.
    func waitingForRelay(_ channel: any Channel) {
        let key = ObjectIdentifier(channel)
        let tracked = lock.withLock { () -> Bool in
            if stopping { return false }
            waiting[key] = channel
            return true
        }
        guard tracked else { return channel.close(promise: nil) }
        channel.closeFuture.whenComplete { [weak self] _ in self?.handedToRelay(channel) }
    }

    /// True while no relay has taken `channel` over (and it is open).
    func isWaitingForRelay(_ channel: any Channel) -> Bool {
        lock.withLock { waiting[ObjectIdentifier(channel)] != nil }
    }

    /// `channel` is a relay's now (or closed): the relay's `stop()` closes it.
    func handedToRelay(_ channel: any Channel) {
        _ = lock.withLock { waiting.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// The most client connections the proxy holds open.
    public var connectionLimit: Int {
        configuration.maximumConnections ?? Relay.defaultConnectionLimit(splice: false)
    }

    func isAllowed(_ address: SocketAddress?) -> Bool {
        guard let address else { return false }
        return (AddressRange.loopback + configuration.allow).contains { $0.contains(address) }
    }

    /// The relay to `destination` if it has started already: a connection's event loop then hands
    /// the connection over at once. Awaiting ``relay(to:tunnel:)`` resumes on Swift's shared
    /// pool, which a busy process (a test suite) kept for seconds, and a tunnel's 200 came late.
    func startedRelay(to destination: Endpoint, tunnel: Bool) -> Relay? {
        lock.withLock { stopping ? nil : started[RelayKey(destination: destination, tunnel: tunnel)] }
    }

    /// The relay to `destination`, started on first use. It has no listener (connections are
    /// adopted) and reaches the destination by name, per connection. A tunnel's relay intercepts
    /// TLS when the proxy was asked to (and then observes the HTTP inside); a plain request's
    /// observes its HTTP (QA 57: the log had no `http_request` for it).
    func relay(to destination: Endpoint, tunnel: Bool = false) async throws -> Relay {
        let key = RelayKey(destination: destination, tunnel: tunnel)
        let task = try lock.withLock { () throws -> Task<Relay, any Error> in
            if stopping { throw Stopping() }
            if let existing = relays[key] { return existing }
            let task = Task { [self] in
                let interception = tunnel ? try configuration.interception?(destination) : nil
                let relay = Relay(
                    configuration: RelayConfiguration(
                        upstream: destination, link: configuration.link, faults: configuration.faults, seed: configuration.seed,
                        connectTimeout: configuration.connectTimeout, observeHTTP: interception != nil || !tunnel, tls: interception, authority: configuration.authority,
                        forProxyClients: true),
                    eventLog: eventLog, group: group, connector: HostConnector(destination), timeline: timeline)
                do {
                    try await relay.startWithoutListener()
                } catch {
                    await relay.stop()
                    throw error
                }
                lock.withLock { if relays[key] != nil { started[key] = relay } }  // not after a stop
                return relay
            }
            relays[key] = task
            return task
        }
        do {
            return try await task.value
        } catch {
            lock.withLock { _ = relays.removeValue(forKey: key) }
            throw error
        }
    }
}
