import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NetsimCore
import NetsimFaults
import NetsimLink
import NIOSSL
import NetsimTLS

/// A userspace TCP relay that applies a link model to each direction of every connection and
/// injects connection faults.
///
/// ```swift
/// let relay = Relay(configuration: .init(upstream: Endpoint(host: "127.0.0.1", port: 8080),
///                                        link: LinkProfile.named("3g")!.link))
/// let address = try await relay.start()
/// let stale = relay.addFault(FaultRule(.stale(.rst)))
/// ...
/// await relay.stop()
/// ```
/// Every connection, byte batch, fault and close is recorded in ``eventLog``.
///
/// Connections come from the relay's own listener or are handed over already accepted
/// (``adopt(_:)``: the forward proxy, the service); upstream is reached through an
/// ``UpstreamConnector``. `@unchecked Sendable`: mutable state is behind `lock`; each connection's
/// state lives on its own event loop.
public final class Relay: @unchecked Sendable {
    public let configuration: RelayConfiguration
    public let eventLog: EventLog
    /// Sees bytes crossing the sockets, if set.
    let tap: (any RelayTap)?
    let clock = SystemClock()
    /// Diagnostics (`netsim --log-level debug`): what the relay itself did. The event log, not
    /// this, is the record of the connections.
    let logger: Logger
    let group: any EventLoopGroup
    private let ownsGroup: Bool

    let lock = NIOLock()
    var listener: (any Channel)?
    var boundEndpoint: Endpoint?
    var pairs: [ConnectionID: ConnectionPair] = [:]
    /// The HTTP layers of intercepted connections, by the id they share with their wire layer.
    var httpLayers: [ConnectionID: any FaultTarget] = [:]
    /// Everything faults may act on (call with `lock` held).
    var allPairs: [any FaultTarget] { pairs.values.map { $0 as any FaultTarget } + Array(httpLayers.values) }
    var nextFault: UInt64 = 1
    var rules: [FaultID: RuleState] = [:]
    /// The link for every connection when no chooser is set (Relay+Link.swift; with `lock` held).
    var currentLink: LinkConfiguration
    /// Picks each connection's link when set (see ``setLinkChooser(_:)``).
    var linkChooser: (@Sendable (ConnectionID) -> LinkConfiguration)?
    /// When `--fault-at` counts from: the relay's start, or its shared timeline's.
    var startedAt: Int64 = 0
    let timeline: RelayTimeline?
    /// Where connection ids come from.
    let numbering: ConnectionNumbering
    /// A relay on a shared timeline leaves the rules' `fault_added` and `fault_lifted` to it
    /// (``RelayTimeline/announce(_:to:on:)``).
    var announcesRules: Bool { timeline == nil }
    var refusingRules: Set<FaultID> = []
    /// The listener's port while `refuse` keeps it closed.
    var portHold: PortHold?
    /// The last change to the listener asked for (``changeListener(_:)``); each waits for it.
    var listenerChanges: Task<Void, Never>?
    /// Set by ``stop()``: the listener does not come back.
    var listenerStopped = false
    /// ``stop()`` was called.
    private var stopBegun = false
    /// Faults that act once through the relay and have acted (``claimOnce(_:)``).
    var claimedOnce: Set<FaultID> = []
    /// The connection limit and the listener's pause at it (``updateAccepting()``).
    var acceptLimit = AcceptLimit()
    /// How each connection reaches upstream; set by `init` or, from the configuration, by `start`.
    private var upstreamConnector: (any UpstreamConnector)?
    var connector: any UpstreamConnector {
        guard let connector = lock.withLock({ upstreamConnector }) else {
            preconditionFailure("Relay: start() or startWithoutListener() before adopting or accepting connections")
        }
        return connector
    }
    /// `bad-cert`'s TLS contexts, made on first use.
    let badCertContexts = BadCertContexts()

    /// The connector of a connection under `bad-cert` (or a portal answering TLS): the relay's
    /// own TLS with that certificate, naming the address `connection`'s client reached
    /// (``addressReached(by:)``); `fault` is named in the outcome's log line.
    func badCertConnector(_ kind: BadCertificateKind, fault: FaultName, for connection: ConnectionID) throws -> BadCertConnector {
        let context = try badCertContexts.context(kind, reaching: addressReached(by: connection), authority: configuration.authority,
                                                  keyLog: configuration.tls?.clientFacing.keyLogCallback)
        return BadCertConnector(relay: self, kind: kind, fault: fault, context: context)
    }

    /// With interception: its TLS contexts, for connectors given to ``adopt(_:connector:)``.
    private var interceptContexts: InterceptConnector.Contexts?
    /// Each event loop's release timing, made on first use (``releaseTiming(for:)``).
    private var releaseTimings: [ObjectIdentifier: ReleaseTiming] = [:]

    /// The release timing shared by the connections on `loop`; nil when the configuration turns
    /// ``RelayConfiguration/preciseRelease`` off.
    func releaseTiming(for loop: any EventLoop) -> ReleaseTiming? {
        guard configuration.preciseRelease else { return nil }
        return lock.withLock {
            let key = ObjectIdentifier(loop)
            if let made = releaseTimings[key] { return made }
            let made = ReleaseTiming()
            releaseTimings[key] = made
            return made
        }
    }

    /// CPU time the event loops have spent spinning to release deadlines (``EarlyWakeUp``), for
    /// the bench's cost figure.
    public var releaseSpinNanoseconds: Int64 {
        lock.withLock { releaseTimings.values.reduce(0) { $0 + $1.spunNanoseconds } }
    }

    /// Waits in ``connectionsClosed(within:)``, each completed when the last connection finishes
    /// (or removed at its deadline).
    var closedWaiters: [UInt64: EventLoopPromise<Void>] = [:]
    private var nextWaiter: UInt64 = 0

    struct RuleState {
        var rule: FaultRule
        var addedAt: Int64
        var activatedAt: Int64?
        var scheduled: [Scheduled<Void>] = []
    }

    /// Larger reads than NIO's default make fewer system calls on bulk transfers.
    static let maximumReadSize = 256 * 1024
    static let receiveAllocator = AdaptiveRecvByteBufferAllocator(minimum: 1024, initial: 16 * 1024, maximum: maximumReadSize)
    /// NIO reads this many times per readiness event before the read gate is consulted again.
    static let readsPerCycle: UInt = 4
    /// How far a direction's queue can overshoot ``RelayConfiguration/bufferLimit``: one read
    /// cycle's worth of bytes arrives before reading stops. A direction therefore holds at most
    /// `bufferLimit + readOvershoot` bytes (plus NIO's 64 KiB outbound high-water mark).
    public static let readOvershoot = maximumReadSize * Int(readsPerCycle)

    /// - Parameters:
    ///   - eventLog: must use the system clock (the default), as event-loop deadlines do.
    ///   - group: event loops to run on; by default the relay makes one thread per core and
    ///     shuts it down in ``stop()``.
    ///   - tap: sees every byte, FIN and RST crossing the relay's sockets (pcap recording).
    ///   - connector: how connections reach upstream; by default `configuration.upstream`,
    ///     resolved when the relay starts.
    ///   - timeline: shared with other relays acting as one (the proxy's): `--fault-at` counts
    ///     from its start and connection ids are unique across them. By default the relay's own,
    ///     from ``start()``.
    ///   - numbering: shared with other relays whose event logs are read together, without a
    ///     shared timeline (`netsim serve`'s proxies); by default the timeline's, else the relay's own.
    public init(configuration: RelayConfiguration, eventLog: EventLog = EventLog(), group: (any EventLoopGroup)? = nil,
                tap: (any RelayTap)? = nil, connector: (any UpstreamConnector)? = nil, timeline: RelayTimeline? = nil,
                numbering: ConnectionNumbering? = nil) {
        self.configuration = configuration
        self.timeline = timeline
        self.numbering = numbering ?? timeline?.numbering ?? ConnectionNumbering()
        self.upstreamConnector = connector
        self.eventLog = eventLog
        self.tap = tap
        var logger = Logger(label: "netsim.relay")
        logger[metadataKey: "upstream"] = "\(configuration.upstream)"
        self.logger = logger
        self.currentLink = configuration.link
        if let group {
            self.group = group
            self.ownsGroup = false
        } else {
            self.group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
            self.ownsGroup = true
        }
    }

    /// Binds the listener and activates the configured faults. Returns the bound address
    /// (with the real port when the configuration asked for port 0).
    @discardableResult
    public func start() async throws -> Endpoint {
        try prepare()
        let endpoint = try await refusesFromTheStart ? holdPort(configuration.listen) : bind(configuration.listen)
        for rule in configuration.faults { _ = try await addFault(rule) }
        return endpoint
    }

    /// Starts the relay without a listener of its own: connections come through ``adopt(_:)``.
    public func startWithoutListener() async throws {
        try prepare()
        for rule in configuration.faults { _ = try await addFault(rule) }
    }

    private func prepare() throws {
        for rule in configuration.faults { try rule.validate() }
        var connector = lock.withLock { upstreamConnector }
        if connector == nil { connector = try AddressConnector(resolving: configuration.upstream) }
        let contexts = try configuration.tls.map(InterceptConnector.Contexts.init)
        if let contexts, let base = connector, !(base is InterceptConnector) {
            connector = InterceptConnector(relay: self, contexts: contexts, base: base)
        }
        lock.withLock {
            upstreamConnector = connector
            interceptContexts = contexts
            acceptLimit.limit = max(1, configuration.maximumConnections ?? Self.defaultConnectionLimit(splice: configuration.splice))
        }
        startedAt = timeline?.start ?? clock.now()
    }

    /// Adopts the HTTP layer of intercepted connection `id` (its TLS already terminated in the
    /// channel's pipeline): called by ``InterceptConnector`` on the connection's event loop.
    func adoptHTTPLayer(_ channel: any Channel, of id: ConnectionID, connector: any UpstreamConnector) throws {
        channel.eventLoop.preconditionInEventLoop()
        let pair = ConnectionPair(id: id, layer: .http, relay: self, eventLoop: channel.eventLoop, link: .unimpaired, connector: connector)
        try channel.pipeline.syncOperations.addHandler(pair.client)
    }

    /// Takes over a connection accepted elsewhere: from here on it is a relay connection like
    /// those from the listener, with the link, faults and log. The channel should allow remote
    /// half-closure, as the relay's own accepted channels do, and its reads are the relay's from
    /// now on. `connector` reaches upstream for this connection alone (a channel the caller
    /// already connected, say); by default the relay's. Done at once when called on the
    /// channel's event loop.
    @discardableResult
    public func adopt(_ channel: any Channel, connector: (any UpstreamConnector)? = nil) -> EventLoopFuture<Void> {
        let loop = channel.eventLoop
        guard loop.inEventLoop else { return loop.submit { [self] in try adoptNow(channel, connector: connector) } }
        return loop.makeCompletedFuture(Result { try adoptNow(channel, connector: connector) })
    }

    /// ``adopt(_:connector:)`` from the channel's own event loop: done when this returns.
    /// - Parameter openedAt: when the client connected, if before now: a proxy that held the
    ///   connection while it answered a CONNECT (its client already waited out the handshake).
    ///   The link model counts the handshake and per-connection fault times from then.
    public func adoptNow(_ channel: any Channel, connector: (any UpstreamConnector)? = nil, openedAt: NIODeadline? = nil) throws {
        channel.eventLoop.preconditionInEventLoop()
        let pair = makePair(on: channel.eventLoop, connector: connector, openedAt: openedAt)
        try channel.pipeline.syncOperations.addHandler(pair.client)
    }

    /// `ownSocket`: the client's channel is a socket the relay's listener accepted (see
    /// ``ConnectionPair/timesReads``).
    func makePair(on eventLoop: any EventLoop, connector: (any UpstreamConnector)? = nil, ownSocket: Bool = false,
                  openedAt: NIODeadline? = nil) -> ConnectionPair {
        let id = numbering.allocate()
        var connector = connector ?? self.connector
        // A connector handed over with an adopted connection is intercepted as the relay's own is.
        if let contexts = lock.withLock({ interceptContexts }), !(connector is InterceptConnector) {
            connector = InterceptConnector(relay: self, contexts: contexts, base: connector)
        }
        let link = link(for: id)
        return ConnectionPair(id: id, layer: connector is InterceptConnector ? .wire : .whole, relay: self, eventLoop: eventLoop,
                              link: link, connector: connector, ownSocket: ownSocket, openedAt: openedAt)
    }

    /// The address clients connect to, once started.
    public var endpoint: Endpoint? { lock.withLock { boundEndpoint } }

    // MARK: Connections

    /// Called on the pair's event loop when its client leg becomes active: registers it, applies
    /// the faults that act on new connections, and starts the upstream connect.
    func start(_ pair: ConnectionPair) {
        if pair.layer.records(.opened(client: nil)) {
            eventLog.record(.opened(client: pair.client.remoteEndpoint), connection: pair.id, at: pair.now)
            logger.trace("connection opened", metadata: ["connection": "\(pair.id)", "client": "\(pair.client.remoteEndpoint.map(\.description) ?? "?")"])
        }
        if configuration.observeHTTP, pair.layer.seesHTTP { pair.startObserving() }
        pair.tapOpened(.client)
        let (acceptFaults, delayedFaults) = register(pair)
        let link = pair.layer == .http ? .unimpaired : lock.withLock { linkChooser?(pair.id) ?? currentLink }
        // The link chosen as the pair joined `pairs`: a `setLink`/`setLinkChooser` between the
        // accept (when the pair was built) and now did not see the pair, so apply it here.
        let now = pair.now
        pair.timeReads(for: link)
        pair.run {
            $0.update(link: link)
            $0.start(faults: acceptFaults, now: now)
        }
        for (id, delay) in delayedFaults { scheduleDelayedFault(id, on: pair, at: pair.machine.openedAt + delay) }
    }

    /// The same connection and rule always make the same decision for a given seed.
    func affects(_ fault: FaultID, _ connection: ConnectionID, _ probability: Probability) -> Bool {
        if probability.fraction >= 1 { return true }
        var random = SeededRandom(seed: configuration.seed).derived(SeededRandom.label("fault"), fault.raw, connection.raw)
        return random.chance(probability.fraction)
    }

    // MARK: Observation

    /// Connections currently open through the relay.
    public var openConnectionCount: Int { lock.withLock { pairs.count } }

    /// Waits until no connection is open through the relay (at once if none is), at most
    /// `timeout`; true if none is open by then. A connection's end is asynchronous (its sockets
    /// close on their event loop after the peer's FIN or RST), so a caller that has seen its
    /// client's side end waits here rather than polling ``openConnectionCount``.
    @discardableResult
    public func connectionsClosed(within timeout: Duration) async -> Bool {
        let loop = group.next()
        let waiter = lock.withLock { () -> (UInt64, EventLoopPromise<Void>)? in
            if pairs.isEmpty && httpLayers.isEmpty { return nil }
            nextWaiter += 1
            let promise = loop.makePromise(of: Void.self)
            closedWaiters[nextWaiter] = promise
            return (nextWaiter, promise)
        }
        guard let (id, promise) = waiter else { return true }
        let giveUp = loop.scheduleTask(in: TimeAmount(timeout)) { [self] in
            lock.withLock { closedWaiters.removeValue(forKey: id) }?.fail(CancellationError())
        }
        defer { giveUp.cancel() }
        return (try? await promise.futureResult.get()) != nil
    }

    /// A snapshot of every open connection's counters.
    public func connectionStats() async -> [ConnectionStats] {
        let open = lock.withLock { Array(pairs.values) }
        var result: [ConnectionStats] = []
        for pair in open {
            if let stats = try? await pair.eventLoop.submit({ pair.stats }).get() { result.append(stats) }
        }
        return result.sorted { $0.id < $1.id }
    }

    // MARK: Shutdown

    /// Stops listening, closes every connection and, if the relay made its own event loops,
    /// shuts them down. Once: a later call returns at once (an interrupted run stops its relay
    /// from the signal's handler, and its own end may try again).
    public func stop() async {
        guard lock.withLock({ () -> Bool in
            defer { stopBegun = true }
            return !stopBegun
        }) else { return }
        for task in lock.withLock({ rules.values.flatMap(\.scheduled) }) { task.cancel() }
        await closeListenerForGood()
        let open = lock.withLock { allPairs }
        if !open.isEmpty { logger.debug("stopping: closing open connections", metadata: ["open": "\(open.count)"]) }
        for pair in open { try? await pair.eventLoop.submit { pair.closeNow() }.get() }
        await connectionsClosed(within: .seconds(2))
        logWindowsCutShort()  // after the connections' last events, which may still name the fault
        // Only a relay that listened closes a listener: the proxy's relays adopt connections
        // and have none (each logged one at the proxy's stop).
        if endpoint != nil { eventLog.record(.listenerClosed(reason: "relay stopped")) }
        logger.debug("stopped")
        if ownsGroup { try? await group.shutdownGracefully() }
    }
}
