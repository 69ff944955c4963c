import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NetsimCore
import NetsimLink
import NetsimRelay

/// An HTTP forward proxy (`netsim proxy`): absolute-form requests (`GET http://host/path`) and
/// CONNECT tunnels. Each destination gets a netsim ``Relay`` on loopback; a client's connection is
/// joined to a connection through that relay, so the link model and faults act per connection.
/// CONNECT tunnels are carried byte for byte, never decrypted.
///
/// Plain HTTP requests are sent with `Connection: close`: one request per client connection,
/// so a keep-alive connection can never carry a request to a second host through the first's relay.
///
/// With an `outage` or `portal` fault among the faults, the proxy never resolves or connects a
/// destination itself: the relay answers plain HTTP (and a portal breaks TLS in CONNECT tunnels)
/// without any upstream, and the destination is resolved and connected only when the relay
/// connects upstream — when no stand-in answers for the connection (see ``UpstreamDialer``).
public final class ForwardProxy: @unchecked Sendable {
    public struct Configuration: Sendable {
        public var listen: Endpoint
        public var link: LinkConfiguration
        public var faults: [FaultRule]
        public var seed: UInt64
        /// Clients other than loopback ones are accepted only from these networks.
        public var allow: [AddressRange]

        public init(listen: Endpoint = Endpoint(host: "127.0.0.1", port: 0), link: LinkConfiguration = .unimpaired,
                    faults: [FaultRule] = [], seed: UInt64 = 1, allow: [AddressRange] = []) {
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
    let group: MultiThreadedEventLoopGroup
    private let lock = NIOLock()
    private var listener: (any Channel)?
    private var relays: [Endpoint: Task<Route, any Error>] = [:]

    /// A destination's relay, and the dialer behind it when the relay's upstream is one.
    struct Route {
        var relay: Relay
        var dialer: UpstreamDialer?
    }

    /// True when a fault may answer in the destination's place (`outage`, `portal`): then a
    /// destination is resolved and connected only when its relay connects upstream.
    var mayStandIn: Bool {
        configuration.faults.contains { $0.kind.scope == .request }
    }

    public init(configuration: Configuration, eventLog: EventLog = EventLog(), threads: Int = System.coreCount) {
        self.configuration = configuration
        self.eventLog = eventLog
        self.group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, threads))
    }

    @discardableResult
    public func start() async throws -> Endpoint {
        for rule in configuration.faults { try rule.validate() }
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ProxyRequestHandler(proxy: self))
                }
            }
            .bind(host: configuration.listen.host, port: configuration.listen.port)
            .get()
        lock.withLock { listener = channel }
        return Endpoint(host: configuration.listen.host, port: channel.localAddress?.port ?? configuration.listen.port)
    }

    public func stop() async {
        let (channel, tasks) = lock.withLock { () -> ((any Channel)?, [Task<Route, any Error>]) in
            defer {
                listener = nil
                relays.removeAll()
            }
            return (listener, Array(relays.values))
        }
        try? await channel?.close()
        for task in tasks {
            if let route = try? await task.value {
                await route.relay.stop()
                await route.dialer?.stop()
            }
        }
        try? await group.shutdownGracefully()
    }

    func isAllowed(_ address: SocketAddress?) -> Bool {
        guard let address else { return false }
        return (AddressRange.loopback + configuration.allow).contains { $0.contains(address) }
    }

    /// The relay to `destination`, started on first use. Its upstream is the destination itself
    /// (resolved as the relay starts), or a dialer when a stand-in fault may answer for it.
    func relay(to destination: Endpoint) async throws -> Relay {
        let task = lock.withLock { () -> Task<Route, any Error> in
            if let existing = relays[destination] { return existing }
            let task = Task { [self] in
                var dialer: UpstreamDialer?
                if mayStandIn { dialer = UpstreamDialer(destination: destination, group: group) }
                let upstream = try await dialer?.start() ?? destination
                let relay = Relay(
                    configuration: RelayConfiguration(
                        listen: Endpoint(host: "127.0.0.1", port: 0), upstream: upstream,
                        link: configuration.link, faults: configuration.faults, seed: configuration.seed),
                    eventLog: eventLog, group: group)
                do {
                    try await relay.start()
                } catch {
                    await relay.stop()
                    await dialer?.stop()
                    throw error
                }
                return Route(relay: relay, dialer: dialer)
            }
            relays[destination] = task
            return task
        }
        do {
            return try await task.value.relay
        } catch {
            lock.withLock { _ = relays.removeValue(forKey: destination) }
            throw error
        }
    }
}

/// Reads one request head from a client, then joins it to the destination through its relay.
final class ProxyRequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    static let maximumHead = 64 * 1024
    private let proxy: ForwardProxy
    private var buffered: ByteBuffer?
    private var done = false

    init(proxy: ForwardProxy) { self.proxy = proxy }

    func channelActive(context: ChannelHandlerContext) {
        if !proxy.isAllowed(context.channel.remoteAddress) {
            reply(context, "403 Forbidden", "netsim proxy: clients from \(context.channel.remoteAddress?.ipAddress ?? "?") are not allowed (see --allow)\n")
            return
        }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !done else { return }
        var incoming = unwrapInboundIn(data)
        if buffered == nil { buffered = incoming } else { buffered!.writeBuffer(&incoming) }
        let view = buffered!.readableBytesView
        guard let end = view.firstRange(of: Array("\r\n\r\n".utf8)) else {
            if view.count > Self.maximumHead { reply(context, "431 Request Header Fields Too Large", "request head too large\n") }
            return
        }
        done = true
        let headLength = end.upperBound - view.startIndex
        let headText = String(decoding: view.prefix(headLength), as: UTF8.self)
        var rest = buffered!
        rest.moveReaderIndex(forwardBy: headLength)
        buffered = nil
        handle(head: headText, rest: rest, context: context)
    }

    private func handle(head: String, rest: ByteBuffer, context: ChannelHandlerContext) {
        var lines = head.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        let requestLine = lines.isEmpty ? [] : lines.removeFirst().split(separator: " ").map(String.init)
        guard requestLine.count == 3 else { return reply(context, "400 Bad Request", "malformed request line\n") }
        let (method, target, version) = (requestLine[0], requestLine[1], requestLine[2])
        let destination: Endpoint
        var first: ByteBuffer
        if method == "CONNECT" {
            guard let endpoint = try? Endpoint(parsing: target) else {
                return reply(context, "400 Bad Request", "CONNECT needs HOST:PORT\n")
            }
            destination = endpoint
            first = rest
        } else {
            guard let (endpoint, path) = Self.splitAbsolute(target) else {
                return reply(context, "400 Bad Request", "netsim proxy takes absolute-form requests (GET http://host/path) and CONNECT\n")
            }
            destination = endpoint
            let hopByHop: Set<String> = ["connection", "proxy-connection", "keep-alive", "proxy-authorization"]
            var text = "\(method) \(path) \(version)\r\n"
            var hasHost = false
            for line in lines {
                let name = line.split(separator: ":", maxSplits: 1).first.map { $0.lowercased() } ?? ""
                if name == "host" { hasHost = true }
                if !hopByHop.contains(name) { text += line + "\r\n" }
            }
            // The Host header names the site for the server (and for a portal's or an outage's answer).
            if !hasHost { text += "Host: \(Self.authority(of: target))\r\n" }
            text += "Connection: close\r\n\r\n"
            first = context.channel.allocator.buffer(string: text)
            var rest = rest
            first.writeBuffer(&rest)
        }
        let isConnect = method == "CONNECT"
        let channel = context.channel
        let proxy = self.proxy
        _ = channel.setOption(ChannelOptions.autoRead, value: false)
        let relayFuture = channel.eventLoop.makeFutureWithTask { try await proxy.relay(to: destination) }
        let connected = relayFuture.flatMap { relay -> EventLoopFuture<any Channel> in
            ClientBootstrap(group: channel.eventLoop)
                .channelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
                .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
                .connect(host: "127.0.0.1", port: relay.endpoint?.port ?? 0)
        }
        let bound = NIOLoopBound((self, context), eventLoop: channel.eventLoop)
        let firstBytes = first
        connected.assumeIsolated().whenComplete { result in
            let (handler, context) = bound.value
            switch result {
            case .failure(let error):
                handler.reply(context, "502 Bad Gateway", "netsim proxy: cannot reach \(destination): \(error)\n")
            case .success(let outbound):
                if isConnect {
                    context.writeAndFlush(handler.wrapOutboundOut(context.channel.allocator.buffer(string: "HTTP/1.1 200 Connection Established\r\n\r\n")), promise: nil)
                }
                if firstBytes.readableBytes > 0 { outbound.writeAndFlush(firstBytes, promise: nil) }
                // Both channels are on this event loop (the connect used it).
                let (local, remote) = GlueHandler.matchedPair()
                do {
                    try context.pipeline.syncOperations.addHandler(local)
                    try outbound.pipeline.syncOperations.addHandler(remote)
                    context.pipeline.syncOperations.removeHandler(handler, promise: nil)
                } catch {
                    context.close(promise: nil)
                    outbound.close(promise: nil)
                    return
                }
                _ = context.channel.setOption(ChannelOptions.autoRead, value: true)
            }
        }
    }

    /// `http://host[:port]/path` → `host[:port]`.
    static func authority(of target: String) -> String {
        let afterScheme = target.dropFirst("http://".count)
        return String(afterScheme[..<(afterScheme.firstIndex(of: "/") ?? afterScheme.endIndex)])
    }

    /// `http://host[:port]/path` → (host:port, /path).
    static func splitAbsolute(_ target: String) -> (Endpoint, String)? {
        guard target.lowercased().hasPrefix("http://") else { return nil }
        let afterScheme = target.dropFirst("http://".count)
        let slash = afterScheme.firstIndex(of: "/") ?? afterScheme.endIndex
        let authority = String(afterScheme[..<slash])
        let path = slash == afterScheme.endIndex ? "/" : String(afterScheme[slash...])
        guard !authority.isEmpty, !authority.contains("@") else { return nil }
        if let endpoint = try? Endpoint(parsing: authority) { return (endpoint, path) }
        if let endpoint = try? Endpoint(parsing: authority + ":80") { return (endpoint, path) }
        return nil
    }

    private func reply(_ context: ChannelHandlerContext, _ status: String, _ message: String) {
        done = true
        let text = "HTTP/1.1 \(status)\r\nContent-Type: text/plain\r\nContent-Length: \(message.utf8.count)\r\nConnection: close\r\n\r\n\(message)"
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(channel.allocator.buffer(string: text))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }
}
