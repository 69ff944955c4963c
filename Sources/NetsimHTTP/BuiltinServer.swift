import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOTLS
import NetsimTLS
import NetsimAccept
import NetsimCore

/// The built-in upstream: an HTTP server that answers from a scenario's routes and records
/// every request it receives — plaintext HTTP/1.1 by default, over TLS HTTP/1.1 and h2 by ALPN.
///
/// ```swift
/// let server = BuiltinServer(routes: [HTTPRoute(path: "/feed", body: .generated(bytes: 100_000))],
///                            idleTimeout: .seconds(5))
/// let upstream = try await server.start()      // 127.0.0.1:<free port>
/// ...
/// await server.stop()
/// let seen = server.requests                   // method, path, connection, reuse, time, status
/// ```
///
/// Keep-alive and pipelining follow HTTP/1.1; `idleTimeout` closes idle keep-alive connections
/// like a real server's keep-alive timeout (on h2: a GOAWAY, then a close). The pipelines are in
/// `BuiltinServer+Pipelines.swift`.
// `@unchecked Sendable`: mutable state (listener, open channels) is behind its lock.
public final class BuiltinServer: @unchecked Sendable {
    public let routes: [HTTPRoute]
    public let idleTimeout: Duration?
    /// Plaintext HTTP/1.1 unless told otherwise: TLS with ALPN, or h2c.
    public let transport: UpstreamTransport
    let table: RouteTable
    let log: RequestLog
    /// Made from ``transport`` in ``start(host:port:)`` (where a bad configuration can throw).
    private var sslContext: NIOSSLContext?
    private let group: any EventLoopGroup
    private let ownsGroup: Bool

    private let lock = NSLock()
    private var listener: (any Channel)?
    private var boundEndpoint: Endpoint?
    private var connections: [ObjectIdentifier: any Channel] = [:]
    /// Accept-order numbers handed from the listener to the accepted channel's initializer.
    private var acceptedOrder: [ObjectIdentifier: Int] = [:]
    private var acceptedCount = 0
    private var peers: [Int: Endpoint] = [:]
    private var handshakeAllowance: (@Sendable () -> Duration)?

    /// - Parameters:
    ///   - idleTimeout: close a keep-alive connection after this long without a request in
    ///     progress (nil: never).
    ///   - eventLog: request times are on its timeline when given (nothing is recorded in it);
    ///     otherwise they count from ``start(host:port:)``.
    ///   - group: event loops to run on; by default the server makes one thread and shuts it down
    ///     in ``stop()``.
    ///   - transport: plaintext HTTP/1.1 by default; TLS (HTTP/1.1 and h2 by ALPN) or h2c.
    public init(
        routes: [HTTPRoute], idleTimeout: Duration? = nil, transport: UpstreamTransport = .plaintextHTTP1,
        eventLog: EventLog? = nil, group: (any EventLoopGroup)? = nil
    ) {
        self.routes = routes
        self.idleTimeout = idleTimeout
        self.transport = transport
        self.table = RouteTable(routes: routes)
        self.log = RequestLog(eventLog: eventLog)
        if let group {
            self.group = group
            self.ownsGroup = false
        } else {
            self.group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            self.ownsGroup = true
        }
    }

    /// Behind netsim's relay a connection reaches the server as soon as its client connects, and
    /// its first request one handshake later (the relay holds the client's bytes for it); a
    /// server across a real link accepts the connection at that later moment, with the request.
    /// So a connection's idle time before its first request counts from `allowance()` after it
    /// was accepted (the relay's current handshake time): an `idleTimeout` shorter than the
    /// handshake closed every new connection before its first request (QA 35: `idle_timeout: 1s`
    /// behind 500 ms of latency). The scenario runner sets it; a packet link's server needs none.
    public func allowForHandshake(_ allowance: @escaping @Sendable () -> Duration) {
        lock.withLock { handshakeAllowance = allowance }
    }

    /// The bytes of a ``HTTPBody/generated(bytes:)`` body of that size, as the server sends them.
    public static func generatedBody(bytes: Int) -> [UInt8] { GeneratedBody.bytes(bytes) }

    /// Every request received, in arrival order (recorded when its head arrives, so requests whose
    /// client went away before the answer are included, with the status they would have got).
    public var requests: [ServerRequest] { log.all }

    /// The address it listens on, once started.
    public var endpoint: Endpoint? { lock.withLock { boundEndpoint } }

    /// Binds (127.0.0.1 and a free port by default) and returns the bound address.
    @discardableResult
    public func start(host: String = "127.0.0.1", port: Int = 0) async throws -> Endpoint {
        log.restartClock()
        let context = try transport.tls(reaching: host).map { try NIOSSLContext(configuration: $0) }
        lock.withLock { sslContext = context }
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .serverChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    // Out of descriptors, an accept waits 1 s, not spins.
                    try channel.pipeline.syncOperations.addHandlers(AcceptBackoff(), AcceptOrder(server: self))
                }
            }
            .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .childChannelOption(ChannelOptions.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture { try configure(channel) }
            }
            .bind(host: host, port: port)
            .get()
        let bound = Endpoint(host: host, port: channel.localAddress?.port ?? port)
        lock.withLock {
            listener = channel
            boundEndpoint = bound
        }
        return bound
    }

    /// Stops listening, closes every open connection and, if the server made its own event
    /// loop, shuts it down.
    public func stop() async {
        let (channel, open) = lock.withLock {
            defer { listener = nil }
            return (listener, Array(connections.values))
        }
        try? await channel?.close()
        for connection in open { try? await connection.close() }
        if ownsGroup { try? await group.shutdownGracefully() }
    }

    /// Connections currently open.
    public var openConnectionCount: Int { lock.withLock { connections.count } }

    /// The peer address of a connection (numbered as in ``ServerRequest/connection``): the
    /// client's own address when it connects directly, the relay's upstream leg behind a relay.
    public func peerAddress(ofConnection number: Int) -> Endpoint? {
        lock.withLock { peers[number] }
    }

    // MARK: Connections

    fileprivate func accepted(_ channel: any Channel) {
        lock.withLock {
            acceptedCount += 1
            acceptedOrder[ObjectIdentifier(channel)] = acceptedCount
        }
    }

    private func configure(_ channel: any Channel) throws {
        let id = ObjectIdentifier(channel)
        let peer = channel.remoteAddress.map { Endpoint(host: $0.ipAddress ?? "?", port: $0.port ?? 0) }
        let number = lock.withLock { () -> Int in
            connections[id] = channel
            let number = acceptedOrder.removeValue(forKey: id) ?? 0
            peers[number] = peer
            return number
        }
        channel.closeFuture.whenComplete { [self] _ in
            _ = lock.withLock { connections.removeValue(forKey: id) }
        }
        let allowance = lock.withLock { handshakeAllowance }
        let served = ServedConnection(number: number, acceptedOnTheLink: allowance.map { .now() + .nanoseconds($0().nanoseconds) })
        guard let sslContext = lock.withLock({ sslContext }) else {
            if transport.protocols.first == .http2 {
                try configureHTTP2(channel, connection: served)
            } else {
                try configureHTTP1(channel, connection: served)
            }
            return
        }
        let pipeline = channel.pipeline.syncOperations
        try pipeline.addHandler(NIOSSLServerHandler(context: sslContext))
        let offersHTTP1 = transport.protocols.contains(.http1)
        try pipeline.addHandler(ApplicationProtocolNegotiationHandler { [self] result, channel in
            channel.eventLoop.makeCompletedFuture {
                switch result {
                case .negotiated(ApplicationProtocol.http2.rawValue):
                    try configureHTTP2(channel, connection: served)
                case .negotiated(ApplicationProtocol.http1.rawValue):
                    try configureHTTP1(channel, connection: served)
                default:
                    // No ALPN: HTTP/1.1 if offered, else h2 (a client that asked for nothing and
                    // speaks h2 by prior knowledge).
                    if offersHTTP1 { try configureHTTP1(channel, connection: served) } else { try configureHTTP2(channel, connection: served) }
                }
            }
        })
    }
}

/// On the listening channel: numbers connections in the order they are accepted, before the
/// bootstrap hands each to its own event loop (where initializers may run in another order).
private final class AcceptOrder: ChannelInboundHandler {
    typealias InboundIn = any Channel
    typealias InboundOut = any Channel

    private let server: BuiltinServer

    init(server: BuiltinServer) { self.server = server }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        server.accepted(unwrapInboundIn(data))
        context.fireChannelRead(data)
    }
}
