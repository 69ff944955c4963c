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
    private var relays: [Endpoint: Task<Relay, any Error>] = [:]

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
        let (channel, tasks) = lock.withLock { () -> ((any Channel)?, [Task<Relay, any Error>]) in
            defer {
                listener = nil
                relays.removeAll()
            }
            return (listener, Array(relays.values))
        }
        try? await channel?.close()
        for task in tasks {
            if let relay = try? await task.value { await relay.stop() }
        }
        try? await group.shutdownGracefully()
    }

    func isAllowed(_ address: SocketAddress?) -> Bool {
        guard let address else { return false }
        return (AddressRange.loopback + configuration.allow).contains { $0.contains(address) }
    }

    /// The relay to `destination`, started on first use.
    func relay(to destination: Endpoint) async throws -> Relay {
        let task = lock.withLock { () -> Task<Relay, any Error> in
            if let existing = relays[destination] { return existing }
            let task = Task { [self] in
                let relay = Relay(
                    configuration: RelayConfiguration(
                        listen: Endpoint(host: "127.0.0.1", port: 0), upstream: destination,
                        link: configuration.link, faults: configuration.faults, seed: configuration.seed),
                    eventLog: eventLog, group: group)
                try await relay.start()
                return relay
            }
            relays[destination] = task
            return task
        }
        do {
            return try await task.value
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
            for line in lines {
                let name = line.split(separator: ":", maxSplits: 1).first.map { $0.lowercased() } ?? ""
                if !hopByHop.contains(name) { text += line + "\r\n" }
            }
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
                let (local, remote) = GlueHandler.matchedPair()
                do {
                    try context.pipeline.syncOperations.addHandler(local)
                    context.pipeline.syncOperations.removeHandler(handler, promise: nil)
                } catch {
                    context.close(promise: nil)
                    outbound.close(promise: nil)
                    return
                }
                outbound.pipeline.addHandler(remote).whenComplete { _ in
                    _ = context.channel.setOption(ChannelOptions.autoRead, value: true)
                }
            }
        }
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
