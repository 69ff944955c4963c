import Foundation
import NIOCore
import NIOHTTP2
import NIOSSL
import NIOTLS
import NetsimCore
import NetsimFaults

/// The HTTP layer of an intercepted connection whose client negotiated h2: an HTTP/2 proxy.
///
/// The client's h2 connection (TLS already terminated) meets one h2 connection of the relay's own
/// to upstream, and each client stream is carried on one upstream stream, frame payload by frame
/// payload (``HTTP2ClientStream``, ``HTTP2UpstreamStream``). Requests and responses are logged
/// with their stream; request faults (`outage`, `portal`) answer a stream themselves while the
/// connection and its other streams live on; a GOAWAY from upstream reaches the client with the
/// last stream translated. Like the HTTP/1 layer it shares the connection's id and logs only HTTP,
/// its faults and a failure to reach upstream.
///
/// Everything runs on the connection's event loop. `@unchecked Sendable`: loop-confined.
final class HTTP2Layer: FaultTarget, @unchecked Sendable {
    let id: ConnectionID
    let layer = ConnectionLayer.http
    let eventLoop: any EventLoop
    private let relay: Relay
    private let client: any Channel
    private var upstream: (any Channel)?
    private var multiplexer: NIOHTTP2Handler.StreamMultiplexer?
    /// Client streams waiting for the upstream connection.
    private var waiting: [(Result<NIOHTTP2Handler.StreamMultiplexer, any Error>) -> Void] = []
    private var upstreamFailure: (any Error)?
    /// Request faults in force, oldest first: the newest answers.
    private var standIns: [(FaultID, any StandIn)] = []
    private var requestCount = 0
    private var tasks: [Scheduled<Void>] = []
    private var ended = false
    /// Client stream ↔ upstream stream, for translating a GOAWAY's last stream.
    private var streams: [(client: Int, upstream: Int)] = []
    /// Client streams open now, and the highest one seen.
    private var openStreams = Set<Int>()
    private var lastClientStream = 0
    /// A graceful GOAWAY was sent: close once the streams in flight have ended.
    private var drainingAfterGoAway = false
    /// `rst-stream` armed for the next request on this connection.
    private var pendingReset: (FaultID, RstStream.Code)?
    /// Says which streams the client opens after a GOAWAY (``speakH2(limitingStreamsTo:)``).
    private var lateStreams: HTTP2LateStreamWatch?

    var now: Int64 { Int64(eventLoop.now.uptimeNanoseconds) }

    init(id: ConnectionID, relay: Relay, client: any Channel) {
        self.id = id
        self.relay = relay
        self.client = client
        self.eventLoop = client.eventLoop
    }

    /// Speaks h2 on the client channel, joins the relay's fault rules and connects upstream.
    func start(connector: TLSUpstreamConnector) throws {
        let (immediate, delayed) = relay.register(self)
        do {
            try speakH2(limitingStreamsTo: immediate.compactMap({ $0.1.as(MaxStreams.self)?.limit }).last)
        } catch {
            relay.finished(self)
            throw error
        }
        client.closeFuture.whenComplete { [self] _ in end() }
        for (fault, kind) in immediate {
            if let limit = kind.as(MaxStreams.self)?.limit {
                maxStreamsFaults.append((fault, limit))
                log(.faultFired(fault: MaxStreams.faultName, detail: "SETTINGS_MAX_CONCURRENT_STREAMS = \(limit) from the first SETTINGS"))
            } else {
                apply(kind, id: fault, atAccept: true)
            }
        }
        for (fault, delay) in delayed { relay.scheduleDelayedFault(fault, on: self, at: now + delay) }
        connectUpstream(connector)
    }

    /// The h2 server side on the client's channel. A `max-streams` in force is part of the
    /// connection's first SETTINGS (a second SETTINGS right after would race the preface).
    private func speakH2(limitingStreamsTo limit: Int?) throws {
        var connection = NIOHTTP2Handler.ConnectionConfiguration()
        if let limit {
            connection.initialSettings = connection.initialSettings.filter { $0.parameter != .maxConcurrentStreams }
                + [HTTP2Setting(parameter: .maxConcurrentStreams, value: limit)]
        }
        let watch = HTTP2LateStreamWatch { [self] stream, last, cause in
            log(.faultFired(fault: cause, detail: "stream \(stream) opened after the GOAWAY (last stream \(last)) and ignored, as RFC 9113 §6.8 lets a server: the client must send it again on a new connection"))
        }
        try client.pipeline.syncOperations.addHandler(watch)  // before the h2 handler, which ignores such streams silently
        lateStreams = watch
        _ = try client.pipeline.syncOperations.configureHTTP2Pipeline(
            mode: .server, connectionConfiguration: connection, streamConfiguration: .init()
        ) { [self] stream in
            stream.eventLoop.makeCompletedFuture {
                let streamID = try stream.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID)
                try stream.pipeline.syncOperations.addHandler(HTTP2ClientStream(layer: self, streamID: streamID.map { Int($0) } ?? 0))
            }
        }
        // A peer that half-closes an h2 connection is done with it (relay legs allow half-closure).
        try client.pipeline.syncOperations.addHandler(CloseOnInputClosed())
    }

    private func connectUpstream(_ connector: TLSUpstreamConnector) {
        connector.connect(for: id, on: eventLoop, timeout: relay.configuration.connectTimeout) { [self] channel in
            channel.eventLoop.makeCompletedFuture {
                let sync = channel.pipeline.syncOperations
                multiplexer = try sync.configureHTTP2Pipeline(
                    mode: .client, connectionConfiguration: .init(), streamConfiguration: .init()
                ) { pushed in pushed.close() }  // server push is refused, as browsers now do
                try sync.addHandler(HTTP2UpstreamConnection(layer: self))
                // No leg handler gates this connection's reads: it reads from now on. A channel
                // the forward proxy connected comes with reading off, and never read an answer.
                try channel.syncOptions?.setOption(ChannelOptions.autoRead, value: true)
            }
        }.whenComplete { [self] result in
            switch result {
            case .success(let channel):
                guard !ended else {
                    channel.close(promise: nil)  // the client left while this connected
                    return
                }
                upstream = channel
                channel.closeFuture.whenComplete { [self] _ in upstreamClosed() }
                let ready = waiting
                waiting.removeAll()
                if let multiplexer { for resume in ready { resume(.success(multiplexer)) } }
            case .failure(let error):
                upstreamFailed(error, detail: "\(SocketFailureText.classify(error).1)")
            }
        }
    }

    // MARK: Streams

    /// A client stream's request arrived: whether a request fault answers it.
    func standInReply(to request: HTTPRequestSummary) -> (FaultName, StandInReply)? {
        guard let (_, standIn) = standIns.last else { return nil }
        return (standIn.faultName, standIn.reply(to: request, now: Date()))
    }

    /// Counts a request on this connection; true when it is not the first.
    func countRequest() -> Bool {
        defer { requestCount += 1 }
        return requestCount > 0
    }

    /// Opens the upstream stream that carries client stream `clientStream` (once upstream is
    /// connected), with `initializer` setting up its pipeline.
    func openUpstreamStream(for clientStream: Int, _ initializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>,
                            then done: @escaping (Result<any Channel, any Error>) -> Void) {
        let open: (Result<NIOHTTP2Handler.StreamMultiplexer, any Error>) -> Void = { [self] ready in
            switch ready {
            case .failure(let error): done(.failure(error))
            case .success(let multiplexer):
                let promise = eventLoop.makePromise(of: (any Channel).self)
                multiplexer.createStreamChannel(promise: promise, initializer)
                promise.futureResult.whenComplete { result in done(result) }
            }
        }
        if let upstreamFailure { return open(.failure(upstreamFailure)) }
        if upstream != nil, let multiplexer { return open(.success(multiplexer)) }
        waiting.append(open)
    }

    /// An upstream stream got its id (when its first frame was written).
    func carried(clientStream: Int, on upstream: any Channel) {
        if let upstreamID = try? upstream.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID) {
            streams.append((clientStream, Int(upstreamID)))
        }
    }

    func log(_ kind: EventKind) {
        relay.eventLog.record(kind, connection: id, at: now)
    }

    // MARK: Upstream

    func upstreamFailed(_ error: any Error, detail: String) {
        guard upstreamFailure == nil else { return }
        upstreamFailure = error
        log(.upstreamFailed(reason: SocketFailureText.classify(error).0, detail: detail))
        let stuck = waiting
        waiting.removeAll()
        for resume in stuck { resume(.failure(error)) }
    }

    /// Upstream said GOAWAY: the client hears it too, with the last of its own streams that
    /// upstream will still process, and the same error code.
    func upstreamWentAway(lastStream: HTTP2StreamID, errorCode: HTTP2ErrorCode) {
        let last = streams.filter { $0.upstream <= Int(lastStream) }.map(\.client).max() ?? 0
        let frame = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: HTTP2StreamID(last), errorCode: errorCode, opaqueData: nil))
        lateStreams?.wentAway(last: last, cause: .upstreamGoAway)
        client.writeAndFlush(frame, promise: nil)
    }

    private func upstreamClosed() {
        // Streams still open on the client get reset by their own handlers; the connection ends.
        client.close(promise: nil)
    }

    private func end() {
        guard !ended else { return }
        ended = true
        upstream?.close(promise: nil)
        for task in tasks { task.cancel() }
        tasks.removeAll()
        relay.finished(self)
    }

    // MARK: Stream bookkeeping and HTTP/2 faults

    func streamOpened(_ stream: Int) {
        openStreams.insert(stream)
        lastClientStream = max(lastClientStream, stream)
    }

    /// The `max-streams` limit in force when client stream `stream` would exceed it (that many
    /// streams opened before it are still open), else nil. NIO enforces an advertised limit only
    /// once the client acknowledged it, so streams opened before the SETTINGS arrived all ran.
    func exceedsStreamLimit(_ stream: Int) -> Int? {
        guard let limit = maxStreamsFaults.last?.1 else { return nil }
        return openStreams.lazy.filter { $0 < stream }.count >= limit ? limit : nil
    }

    func streamClosed(_ stream: Int) {
        openStreams.remove(stream)
        if drainingAfterGoAway, openStreams.isEmpty { closeAfterPendingFrames() }
    }

    /// Closes the connection once the frames already written are on the wire: a second GOAWAY
    /// (allowed, same last stream) flushes them ahead of the close.
    private func closeAfterPendingFrames() {
        let frame = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: HTTP2StreamID(lastClientStream), errorCode: .noError, opaqueData: nil))
        client.writeAndFlush(frame).whenComplete { [self] _ in closeAsTheRelay() }
    }

    /// Ends the connection on netsim's own initiative: the wire layer, which logs `closed`, is
    /// told first, so the log names the relay (it named the client, whose FIN answering the
    /// close_notify reached the wire before the loopback's own).
    private func closeAsTheRelay() {
        relay.wireLayer(of: id)?.run { $0.httpLayerCloses() }
        client.close(promise: nil)
    }

    /// Ends the connection because upstream cannot be had: the wire layer's `closed` names
    /// upstream, as through an HTTP/1.1 layer.
    func closeForWantOfUpstream() {
        relay.wireLayer(of: id)?.run { $0.endsForWantOfUpstream() }
        client.close(promise: nil)
    }

    /// The `rst-stream` armed for this request, if any: each application resets one request
    /// through the relay (the next one), so a client's retry can succeed.
    func takeReset() -> RstStream.Code? {
        guard let (fault, code) = pendingReset else { return nil }
        pendingReset = nil
        return relay.claimOnce(fault) ? code : nil
    }

    private func goAway(_ mode: GoAway.Mode) {
        let code: HTTP2ErrorCode = mode == .graceful ? .noError : .internalError
        let frame = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: HTTP2StreamID(lastClientStream), errorCode: code, opaqueData: nil))
        let inFlight = openStreams.count
        switch mode {
        case .graceful:
            log(.faultFired(fault: GoAway.faultName, detail: "GOAWAY (NO_ERROR, last stream \(lastClientStream)): \(inFlight) stream(s) in flight finish, new requests must use a new connection"))
            drainingAfterGoAway = true
            lateStreams?.wentAway(last: lastClientStream, cause: GoAway.faultName)
            client.writeAndFlush(frame, promise: nil)
            if openStreams.isEmpty { closeAfterPendingFrames() }
        case .abrupt:
            log(.faultFired(fault: GoAway.faultName, detail: "GOAWAY (INTERNAL_ERROR, last stream \(lastClientStream)) and the connection closed: \(inFlight) stream(s) in flight lost"))
            client.writeAndFlush(frame).whenComplete { [self] _ in closeAsTheRelay() }
        }
    }

    private func limitStreams(_ limit: Int, detail: String) {
        let settings = HTTP2Frame(streamID: .rootStream, payload: .settings(.settings([HTTP2Setting(parameter: .maxConcurrentStreams, value: limit)])))
        client.writeAndFlush(settings, promise: nil)
        log(.faultFired(fault: MaxStreams.faultName, detail: detail))
    }

    // MARK: FaultTarget

    func apply(_ kind: FaultKind, id fault: FaultID, atAccept: Bool) {
        guard layer.takes(kind, atAccept: atAccept) else { return }
        if let goAway = kind.as(GoAway.self) {
            self.goAway(goAway.mode)
        } else if let reset = kind.as(RstStream.self) {
            pendingReset = (fault, reset.code)
        } else if let maxStreams = kind.as(MaxStreams.self) {
            maxStreamsFaults.removeAll { $0.0 == fault }
            maxStreamsFaults.append((fault, maxStreams.limit))
            limitStreams(maxStreams.limit, detail: "SETTINGS_MAX_CONCURRENT_STREAMS = \(maxStreams.limit): more streams at once are refused")
        } else if let standIn = kind.fault.makeEffect().standIn {
            standIns.removeAll { $0.0 == fault }
            standIns.append((fault, standIn))
        }
    }

    /// `max-streams` faults in force, oldest first: the newest limit holds.
    private var maxStreamsFaults: [(FaultID, Int)] = []

    func lift(_ fault: FaultID) {
        standIns.removeAll { $0.0 == fault }
        if maxStreamsFaults.contains(where: { $0.0 == fault }) {
            maxStreamsFaults.removeAll { $0.0 == fault }
            let limit = maxStreamsFaults.last?.1 ?? MaxStreams.normal
            limitStreams(limit, detail: "SETTINGS_MAX_CONCURRENT_STREAMS back to \(limit)")
        }
    }

    func closeNow() {
        client.close(promise: nil)
    }

    func schedule(at deadline: Int64, _ body: @escaping @Sendable (any FaultTarget) -> Void) {
        let task = eventLoop.scheduleTask(deadline: .uptimeNanoseconds(UInt64(max(0, deadline)))) { [self] in
            if !ended { body(self) }
        }
        tasks.append(task)
    }
}

/// On the relay's upstream h2 connection, after `NIOHTTP2Handler`: hears the connection's own
/// frames (GOAWAY), the ALPN outcome and TLS failures.
private final class HTTP2UpstreamConnection: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame

    private let layer: HTTP2Layer

    init(layer: HTTP2Layer) { self.layer = layer }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .goAway(let last, let code, _) = unwrapInboundIn(data).payload {
            layer.upstreamWentAway(lastStream: last, errorCode: code)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            context.close(promise: nil)  // upstream half-closed: the h2 connection is over
        } else if case TLSUserEvent.handshakeCompleted(let negotiated) = event, negotiated != "h2" {
            let error = ChannelError.inappropriateOperationForState
            layer.upstreamFailed(error, detail: "upstream does not speak h2 (ALPN: \(negotiated ?? "none")); the client asked for h2")
            context.close(promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if case .failed(let reason) = TLSFailure(error) {
            layer.upstreamFailed(error, detail: "TLS with upstream failed: \(reason)")
        }
        context.close(promise: nil)
    }
}

/// Closes a channel whose peer half-closed it, or that failed: an h2 connection has no use for
/// half a connection.
private final class CloseOnInputClosed: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event { context.close(promise: nil) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
