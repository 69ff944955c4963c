import NIOCore
import NetsimAccept
import NIOPosix
import NetsimCore

/// The relay's own listener: binding it, pausing it while the relay holds as many connections as
/// it may (``RelayConfiguration/maximumConnections``), and riding out accepts that fail.
///
/// Why a limit: every connection costs the relay two descriptors (eight while it splices). A relay
/// that accepts until accept(2) fails with `EMFILE` has none left for the connections' upstream
/// sockets (those clients see a close), for its event log and pcap, or for the runtime (Dispatch
/// crashes the process when it cannot open /proc to watch its threads). At the limit the listener
/// stops reading, as HAProxy does at `maxconn`: the listening socket stays open, the kernel
/// completes new clients' handshakes into its listen queue, and they are accepted when a
/// connection ends. A pause and its end are `listener_paused` and `listener_resumed` events.
extension Relay {
    /// Descriptors the default limit leaves for the rest of the process: event loops, the event
    /// log, a pcap, TLS files, an exec client's pipes, the ``DescriptorReserve``, the runtime's own.
    public static let reservedDescriptors = 64

    /// Descriptors one connection holds: its two sockets; while it splices, also a copy of each
    /// (the splice path's own) and two pipes of two ends (QA 37: six were counted, and a relay at
    /// its default limit filled its table).
    public static func descriptorsPerConnection(splice: Bool) -> Int { splice ? 8 : 2 }

    /// The default ``RelayConfiguration/maximumConnections``: as many connections as the
    /// open-file soft limit leaves room for now, at ``descriptorsPerConnection(splice:)`` each,
    /// after ``reservedDescriptors``. 9,968 under a limit of 20,000.
    public static func defaultConnectionLimit(splice: Bool) -> Int {
        let soft = min(OpenFileLimit.current.soft, UInt64(Int32.max))
        return max(1, (Int(soft) - reservedDescriptors) / descriptorsPerConnection(splice: splice))
    }

    /// The listen queue's length: clients beyond the connection limit wait there.
    static let listenBacklog: Int32 = 4096

    /// Binds a listener on `endpoint` (the relay's start, or its return after a refusal) and
    /// returns the address bound. With `hold`, the listener is the hold's own socket, bound
    /// already (a refusal's return): the port is never free between the hold and the listener,
    /// where a connect's ephemeral port or another program's bind could take it.
    func bind(_ endpoint: Endpoint, onto hold: PortHold? = nil) async throws -> Endpoint {
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: Self.listenBacklog)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .serverChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(AcceptCounter(relay: self))
                    try channel.pipeline.syncOperations.addHandler(AcceptBackoff(onPause: { [self] error, first in
                        let reason = AcceptBackoff.pauseReason(error)
                        eventLog.record(.listenerPaused(reason: reason))
                        // Once per episode on standard error; every retry is in the event log.
                        logger.log(level: first ? .warning : .debug, "listener paused: \(reason)")
                    }, resume: { [self] _ in updateAccepting() },  // the limit decides whether it reads again
                    onRecover: { [self] in eventLog.record(.listenerResumed(reason: "an accept succeeded again after descriptors ran out")) }))
                    applyAcceptLimit(to: channel)  // before its first read: its cycle's size, or paused if full
                }
            }
            .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .childChannelOption(ChannelOptions.tcpOption(.tcp_nodelay), value: 1)
            .childChannelOption(ChannelOptions.recvAllocator, value: Relay.receiveAllocator)
            .childChannelOption(ChannelOptions.maxMessagesPerRead, value: Relay.readsPerCycle)
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(makePair(on: channel.eventLoop, ownSocket: true).client)
                }
            }
        let channel: any Channel
        if let hold {
            // Listening first says why it cannot (EADDRINUSE) while the hold still owns the socket.
            let descriptor = try hold.listening(backlog: Self.listenBacklog)
            // NIO listens again as it adopts a socket, with its default backlog (128), and sets
            // the backlog option only after, to no effect: listen(2) once more sets the relay's.
            // On the channel's loop, where it closes: the number is still its socket's (a refusal
            // at once could have closed it, and the kernel given the number to another socket).
            channel = try await bootstrap.withBoundSocket(descriptor).map { channel in
                if channel.isActive { PortHold.relisten(descriptor, backlog: Self.listenBacklog) }
                return channel
            }.get()
        } else {
            channel = try await bootstrap.bind(host: endpoint.host, port: endpoint.port).get()
        }
        // The address bound, not the name asked for: `--listen localhost:0` said localhost,
        // which may be 127.0.0.1 or ::1 (QA 63).
        let port = channel.localAddress?.port ?? endpoint.port
        let bound = Endpoint(host: channel.localAddress?.ipAddress ?? endpoint.host, port: port)
        lock.withLock {
            listener = channel
            boundEndpoint = bound
        }
        eventLog.record(.listening(address: bound.description))
        logger.debug("listening", metadata: ["address": "\(bound)", "link": "\(configuration.link)", "limit": "\(connectionLimit)"])
        updateAccepting()  // a listener bound again after a refusal starts paused if the relay is full
        return bound
    }

    /// The most connections the relay holds open: set when it starts.
    public var connectionLimit: Int { lock.withLock { acceptLimit.limit } }

    /// Connections open as the limit counts them (call with `lock` held): the relay's, and those
    /// the listener has accepted whose event loop has not started them yet.
    var countedConnections: Int { pairs.count + acceptLimit.waiting.count }

    /// Called with `lock` held when a connection has registered or finished: true when the count
    /// just reached the limit or fell below it, so the caller (after releasing the lock) calls
    /// ``updateAccepting()``.
    func crossedConnectionLimit(registered: Bool) -> Bool {
        registered ? countedConnections == acceptLimit.limit : countedConnections == acceptLimit.limit - 1
    }

    /// The listener accepted `channel` (on its event loop): counted now, not when the channel's
    /// own loop starts it, and the listener paused at once at the limit, so a burst is accepted
    /// no further than the limit (QA 37: eight with a limit of three).
    func accepted(_ channel: any Channel, by listener: any Channel) {
        let id = ObjectIdentifier(channel)
        lock.withLock { _ = acceptLimit.waiting.insert(id) }
        // Closed before its loop started it (it registered no pair): uncounted here.
        channel.closeFuture.whenComplete { [self] _ in
            let room = lock.withLock { acceptLimit.waiting.remove(id) != nil && crossedConnectionLimit(registered: false) }
            if room { updateAccepting() }
        }
        applyAcceptLimit(to: listener)
    }

    /// Brings the listener in line with the number of open connections: it reads (accepts) below
    /// the limit and pauses at it. Runs on the listener's event loop and counts there, so
    /// connections starting and ending at once on other loops leave it as the last count says,
    /// whatever order their calls arrive in; a change of state is logged once.
    func updateAccepting() {
        guard let listener = lock.withLock({ self.listener }) else { return }
        listener.eventLoop.execute { [self] in applyAcceptLimit(to: listener) }
    }

    /// ``updateAccepting()`` on the listener's event loop. A read cycle accepts no more than the
    /// room left (NIO accepts up to `maxMessagesPerRead` per cycle, whatever `autoRead` becomes).
    private func applyAcceptLimit(to listener: any Channel) {
        let (pause, changed, open, limit, first) = lock.withLock {
            let open = countedConnections
            let pause = open >= acceptLimit.limit
            let first = pause && !acceptLimit.everPaused
            defer {
                acceptLimit.paused = pause
                acceptLimit.everPaused = acceptLimit.everPaused || pause
            }
            return (pause, pause != acceptLimit.paused, open, acceptLimit.limit, first)
        }
        try? listener.syncOptions?.setOption(ChannelOptions.maxMessagesPerRead, value: ConnectionGate.acceptsPerCycle(open: open, limit: limit))
        try? listener.syncOptions?.setOption(ChannelOptions.autoRead, value: !pause)
        guard changed else { return }
        if pause {
            let reason = "\(counted(open, "connection")) open, the relay's limit of \(limit); new connections wait in the listen queue until one ends"
            eventLog.record(.listenerPaused(reason: reason))
            // Warned once: under a steady overload the listener pauses again at every end.
            logger.log(level: first ? .warning : .info, "listener paused: \(reason)\(first ? " (--max-connections, or a higher open-file limit, allows more)" : "")")
        } else {
            eventLog.record(.listenerResumed(reason: "\(counted(open, "connection")) open, under the limit of \(limit)"))
            logger.info("listener resumed", metadata: ["open": "\(open)", "limit": "\(limit)"])
        }
    }
}

/// Counts each connection the relay's listener accepts, as it is accepted (``Relay/accepted(_:by:)``).
private final class AcceptCounter: ChannelInboundHandler, Sendable {
    typealias InboundIn = any Channel
    typealias InboundOut = any Channel
    let relay: Relay

    init(relay: Relay) { self.relay = relay }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        relay.accepted(unwrapInboundIn(data), by: context.channel)
        context.fireChannelRead(data)
    }
}

/// The relay's connection limit and whether the listener is paused at it (under `Relay.lock`).
struct AcceptLimit {
    var limit = Int.max
    /// Connections the listener accepted whose event loop has not started them yet.
    var waiting: Set<ObjectIdentifier> = []
    var paused = false
    /// Whether it has paused before (the first pause is a warning in the log, later ones are not).
    var everPaused = false
}
