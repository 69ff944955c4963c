import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NetsimAccept
import NetsimCore
import NetsimLink
import NetsimRelay

/// Reads one request head from a client, then joins it to the destination through its relay.
final class ProxyRequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    static let maximumHead = 64 * 1024
    /// Bytes after the head kept for the relay while the proxy reaches the destination; beyond
    /// them the client is not read until the relay takes over (it waits in the socket).
    static let maximumEarly = 64 * 1024
    private let proxy: ForwardProxy
    private var buffered: ByteBuffer?
    private var done = false
    /// Between the head and the hand-over (or the proxy's own answer): the proxy resolves and
    /// connects the destination, and watches the client meanwhile.
    private var waiting = false
    /// Bytes the client sent after its head before the relay took over: a request's body read in
    /// the head's read cycle, or while the proxy connected. They were dropped (a 200,000-byte
    /// POST reached the server 28,672 bytes short).
    private var early: ByteBuffer?
    /// The client ended its side after its head, before the relay took over: passed on to the
    /// relay with the connection, unless the client is let go first (``leaveGrace``).
    private var inputClosedEarly = false
    /// How long a client that ended its side waits for the destination (``Relay/proxyClientLeaveGrace``).
    static let leaveGrace = TimeAmount(Relay.proxyClientLeaveGrace)

    /// When the client connected (a CONNECT's tunnel counts from then: its client waited out
    /// the handshake while the proxy held its answer back).
    private var connectedAt = NIODeadline.now()
    /// Ends a head that takes longer than the proxy's `headTimeout`.
    private var headDeadline: Scheduled<Void>?
    /// The request being handled, once its line is read: a request the proxy answers itself is
    /// in the log with its answer (QA 67: a 502 did not say for what).
    private var request: (method: String, target: String)?

    init(proxy: ForwardProxy) { self.proxy = proxy }

    /// The client's end of input (half-closure is allowed, so NIO reports it as an event). Before
    /// a whole head (a port probe, a cancelled request) the connection is closed: the socket used
    /// to stay in CLOSE-WAIT for good, holding one of `--max-connections`. After the head, while
    /// the proxy still reaches the destination, the end is either a half-close (`nc -N`, which
    /// wants its answer) or a client that gave up (curl's `--max-time`), which no proxy can tell
    /// apart: a destination reached within ``leaveGrace`` gets the request and the end; past it
    /// the client is taken as gone, as nginx and Squid take it while they wait (499,
    /// `half_closed_clients off`), its connection closed and the connect dropped. It kept its
    /// place and the connect ran on to the connect timeout (QA 51); dropped at once, an `nc -N`
    /// request to a destination a microsecond away never went (QA 53).
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard let channelEvent = event as? ChannelEvent, channelEvent == .inputClosed else {
            return context.fireUserInboundEventTriggered(event)
        }
        if !done {
            done = true
            context.close(promise: nil)
        } else if waiting, !inputClosedEarly {
            inputClosedEarly = true
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: Self.leaveGrace) {
                let (handler, context) = bound.value
                if handler.waiting { context.close(promise: nil) }
            }
        }
    }

    func channelActive(context: ChannelHandlerContext) {
        connectedAt = context.eventLoop.now
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let timeout = proxy.configuration.headTimeout
        headDeadline = context.eventLoop.scheduleTask(in: TimeAmount(timeout)) {
            let (handler, context) = bound.value
            guard !handler.done, context.channel.isActive else { return }
            handler.reply(context, "408 Request Timeout", "netsim proxy: no whole request head within \(timeout.compactDescription)\n")
        }
        if !proxy.isAllowed(context.channel.remoteAddress) {
            reply(context, "403 Forbidden", "netsim proxy: clients from \(context.channel.remoteAddress?.ipAddress ?? "?") are not allowed (see --allow)\n")
            return
        }
        context.fireChannelActive()
    }

    /// While the proxy reaches the destination the client is read on (its end is how it is seen
    /// to leave), up to ``maximumEarly`` bytes.
    func channelReadComplete(context: ChannelHandlerContext) {
        if waiting, (early?.readableBytes ?? 0) < Self.maximumEarly { context.read() }
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        headDeadline?.cancel()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = unwrapInboundIn(data)
        guard !done else {
            if waiting { early.setOrWriteBuffer(&incoming) }
            return
        }
        if buffered == nil { buffered = incoming } else { buffered!.writeBuffer(&incoming) }
        let view = buffered!.readableBytesView
        guard let end = view.firstRange(of: Array("\r\n\r\n".utf8)) else {
            if view.count > Self.maximumHead { reply(context, "431 Request Header Fields Too Large", "request head too large\n") }
            return
        }
        done = true
        headDeadline?.cancel()
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
        request = (method, target)
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
            let hopByHop = Self.hopByHop(lines)
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
        waiting = true  // the client is read on, one read at a time, to see it leave
        // A started relay is taken on this loop; only a destination's first connection awaits its start.
        let relayFuture = proxy.startedRelay(to: destination, tunnel: isConnect).map { channel.eventLoop.makeSucceededFuture($0) }
            ?? channel.eventLoop.makeFutureWithTask { try await proxy.relay(to: destination, tunnel: isConnect) }
        // Without a stand-in, look up (under the DNS faults) and connect first: an unreachable
        // destination gets a 502 from the proxy.
        let upstream: EventLoopFuture<(any Channel)?> = proxy.mayStandIn
            ? channel.eventLoop.makeSucceededFuture(nil)
            : proxy.lookup.lookUp(destination.host, on: channel.eventLoop).flatMap {
                guard !proxy.isStopping else { return channel.eventLoop.makeFailedFuture(ForwardProxy.Stopping()) }
                return DescriptorReserve.openable(on: channel.eventLoop).flatMap {  // not the runtime's room
                    Relay.legOptions(ClientBootstrap(group: channel.eventLoop))
                        .connectTimeout(.nanoseconds(proxy.configuration.connectTimeout.nanoseconds))
                        .channelOption(ChannelOptions.autoRead, value: false)
                        .channelInitializer { outbound in  // tracked from before its connect: stop() ends a pending one
                            proxy.waitingForRelay(outbound)
                            // Once the client's connection is gone before the relay took both
                            // over, the destination's has no use, connected or still connecting.
                            // After, the relay closes it in its own time: closed here, the FIN the
                            // link still held back for it was lost, and a `closed` by the server
                            // with FIN was logged as a reset.
                            channel.closeFuture.whenComplete { _ in
                                if proxy.isWaitingForRelay(outbound) { outbound.close(promise: nil) }
                            }
                            return outbound.eventLoop.makeSucceededVoidFuture()
                        }
                        .connect(host: destination.host, port: destination.port).map { Optional($0) }
                }
            }
        let bound = NIOLoopBound((self, context), eventLoop: channel.eventLoop)
        let firstBytes = first
        relayFuture.and(upstream).assumeIsolated().whenComplete { result in
            let (handler, context) = bound.value
            guard context.channel.isActive else {
                // The client left first: nothing is answered; why the destination was not had is
                // said once, not as a failure of the destination's (its connect was dropped).
                if !proxy.isStopping {
                    proxy.eventLog.record(.upstreamFailed(reason: .other, detail: "\(destination): the client closed its connection before the destination was reached; the connect was dropped"))
                }
                return
            }
            switch result {
            case .failure(let failure as ProxyLookup.Failure):
                handler.reply(context, failure.status, failure.body)
            case .failure(let error):
                let (reason, detail) = SocketFailureText.classify(error)
                if !(error is ForwardProxy.Stopping) {
                    proxy.eventLog.record(.upstreamFailed(reason: reason, detail: "\(destination): \(detail)"))
                }
                // A destination that never answered is a gateway timeout, as nginx and Squid say it.
                let status = reason == .timeout ? "504 Gateway Timeout" : "502 Bad Gateway"
                handler.reply(context, status, "netsim proxy: cannot reach \(destination): \(SocketFailureText.describe(error))\n")
            case .success(let (relay, outbound)):
                let wait = isConnect ? Self.answerDelay(on: relay.link) : 0
                guard wait > 0 else {
                    if isConnect { handler.established(context) }
                    return handler.join(context, relay, outbound, destination, firstBytes, tunnel: isConnect)
                }
                guard context.channel.isActive, !proxy.isStopping else { return }  // gone, or the proxy is stopping
                context.eventLoop.scheduleTask(in: .nanoseconds(wait)) {
                    let (handler, context) = bound.value
                    guard context.channel.isActive else { return }
                    handler.established(context)
                    handler.join(context, relay, outbound, destination, firstBytes, tunnel: true)
                }
            }
        }
    }

    /// How long a client waits for an answer the proxy writes itself (`200 Connection
    /// Established`, or an error such as 502), from when the proxy could answer: the TCP
    /// handshake's round trip and the request's own. These answers do not cross the link model
    /// (an intercepted tunnel's model sees plaintext), so the proxy holds them back that long, and
    /// a tunnel is adopted with its handshake paid. Before, they came at once: a tunnel cost a
    /// round trip less than through a real proxy, and an error came back in a millisecond. The
    /// link's mean latency: jitter, loss and connect faults do not change it.
    static func answerDelay(on link: LinkConfiguration) -> Int64 {
        link.roundTripNanoseconds.addingSaturating(link.roundTripNanoseconds)
    }

    private func established(_ context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: "HTTP/1.1 200 Connection Established\r\n\r\n")), promise: nil)
    }

    /// Hands the client's connection to `relay`; the bytes read with the head are its first.
    /// `tunnel`: a CONNECT whose answer the proxy held back for the handshake and its own round
    /// trip; the relay counts the connection from when the client connected. A plain request's
    /// connection counts from now: its handshake is still to pay, as through a real proxy, which
    /// reads the request only once the connection is up.
    private func join(_ context: ChannelHandlerContext, _ relay: Relay, _ outbound: (any Channel)?, _ destination: Endpoint,
                      _ firstBytes: ByteBuffer, tunnel: Bool) {
        waiting = false
        let connector = outbound.map { ConnectedUpstream($0, name: destination.description) }
        var firstBytes = firstBytes
        if var early { firstBytes.writeBuffer(&early) }
        early = nil
        do {
            try relay.adoptNow(context.channel, connector: connector, openedAt: tunnel ? connectedAt : nil)
            proxy.handedToRelay(context.channel)
            if let outbound { proxy.handedToRelay(outbound) }
        } catch {
            context.close(promise: nil)
            return
        }
        // The bytes read with the head are the connection's first; then the relay reads.
        if firstBytes.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(firstBytes)) }
        context.fireChannelReadComplete()
        if inputClosedEarly { context.fireUserInboundEventTriggered(ChannelEvent.inputClosed) }
        // `autoRead` stays off: the relay's leg handler turns it on when the relay may read.
        context.pipeline.syncOperations.removeHandler(self, promise: nil)
    }

    /// `http://host[:port]/path` → `host[:port]`.
    static func authority(of target: String) -> String {
        let afterScheme = target.dropFirst("http://".count)
        return String(afterScheme[..<(afterScheme.firstIndex(of: "/") ?? afterScheme.endIndex)])
    }

    /// The request's hop-by-hop header names (lower-case), which the proxy does not forward:
    /// its fixed set, and every name the client's `Connection` header lists (RFC 9110 7.6.1),
    /// except the body's framing (`Content-Length`, `Transfer-Encoding`), which the forwarded
    /// bytes still need.
    static func hopByHop(_ lines: [String]) -> Set<String> {
        var names: Set<String> = ["connection", "proxy-connection", "keep-alive", "proxy-authorization"]
        for line in lines {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "connection" else { continue }
            for token in parts[1].split(separator: ",") {
                names.insert(token.trimmingCharacters(in: .whitespaces).lowercased())
            }
        }
        return names.subtracting(["content-length", "transfer-encoding", "host", ""])
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

    /// Answers the client itself and closes, after ``answerDelay(on:)``; the answer is in the
    /// event log when it is written (`answered_by: proxy`, with no connection: no relay has it).
    private func reply(_ context: ChannelHandlerContext, _ status: String, _ message: String) {
        done = true
        waiting = false
        early = nil
        let text = "HTTP/1.1 \(status)\r\nContent-Type: text/plain\r\nContent-Length: \(message.utf8.count)\r\nConnection: close\r\n\r\n\(message)"
        let channel = context.channel
        let answer = channel.allocator.buffer(string: text)
        let log = proxy.eventLog
        let request = self.request
        // Logged once written: a client gone meanwhile got no answer, and the log said it did (QA 51).
        let send = {
            channel.writeAndFlush(answer).whenComplete { result in
                if case .success = result, let code = Int(status.prefix(3)) {
                    if let request { log.record(.httpRequest(method: request.method, path: request.target, reused: false, answeredBy: "proxy")) }
                    log.record(.httpResponse(status: code, bytes: message.utf8.count, answeredBy: "proxy"))
                }
                channel.close(promise: nil)
            }
        }
        let wait = Self.answerDelay(on: proxy.configuration.link)
        guard wait > 0 else { return send() }
        guard channel.isActive else { return }  // gone, or the proxy is stopping: nothing to answer
        channel.eventLoop.scheduleTask(in: .nanoseconds(wait)) { send() }
    }
}
