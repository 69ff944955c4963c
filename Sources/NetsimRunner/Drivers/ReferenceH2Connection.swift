import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS
import NetsimHTTP
import NetsimRelay
import NetsimScenario
import NetsimTLS

/// One HTTP/2 connection of the reference clients (ALPN chose h2): every request is a stream of
/// its own, spoken through NIOHTTP2's HTTP/1 codec to the same ``ExchangeHandler`` an HTTP/1.1
/// connection uses, so both versions answer and fail alike. The connection is shared by every
/// request to its origin (``H2ConnectionPool``), as h2 clients share one.
///
/// It remembers a GOAWAY from the server: a correct client opens no new stream on such a
/// connection (RFC 9113 §6.8); NIOHTTP2 refuses to, so a client that tries fails that request.
final class ReferenceH2Connection: Sendable {
    let channel: any Channel
    let localPort: Int?
    private let multiplexer: NIOLoopBound<NIOHTTP2Handler.StreamMultiplexer>
    private let goAway: NIOLockedValueBox<HTTP2ErrorCode?>

    fileprivate init(channel: any Channel, multiplexer: NIOLoopBound<NIOHTTP2Handler.StreamMultiplexer>, goAway: NIOLockedValueBox<HTTP2ErrorCode?>) {
        self.channel = channel
        self.multiplexer = multiplexer
        self.goAway = goAway
        localPort = channel.localAddress?.port
    }

    /// The GOAWAY's error code when the server sent one.
    var goneAway: HTTP2ErrorCode? { goAway.withLockedValue { $0 } }

    /// Whether a new stream may go here: the connection is open and the server has not said
    /// GOAWAY. (A connection whose peer silently vanished still looks usable.)
    var takesNewStreams: Bool { channel.isActive && goneAway == nil }

    /// Sends one request on a new stream and reads its response, giving up after `timeout`
    /// (the stream is then reset with CANCEL; the connection lives on).
    func exchange(method: String, url: PlainURL, headers: [HTTPHeader], body: String?, timeout: Duration?) async -> Result<RawResponse, ExchangeFailure> {
        let head = ReferenceRequest.head(method: method, url: url, headers: headers, body: body)
        let bodyBytes = body.map { Array($0.utf8) }
        let limit = TimeAmount.nanoseconds((timeout ?? .seconds(30)).nanoseconds)
        let multiplexer = self.multiplexer
        let future = channel.eventLoop.flatSubmit {
            multiplexer.value.createStreamChannel { stream in
                stream.eventLoop.makeCompletedFuture {
                    try stream.pipeline.syncOperations.addHandler(HTTP2FramePayloadToHTTP1ClientCodec(httpProtocol: .https))
                    try stream.pipeline.syncOperations.addHandler(ExchangeHandler())
                }
            }.flatMap { stream in
                stream.eventLoop.flatSubmit {
                    do {
                        let handler = try stream.pipeline.syncOperations.handler(type: ExchangeHandler.self)
                        return handler.start(head: head, body: bodyBytes, channel: stream, timeout: limit)
                    } catch {
                        return stream.eventLoop.makeFailedFuture(error)
                    }
                }
            }
        }
        do {
            return .success(try await future.get())
        } catch let failure as ExchangeFailure {
            return .failure(failure)
        } catch {
            let kind = NIOErrorKind.kind(of: error) ?? .other
            return .failure(ExchangeFailure(kind: kind, message: "opening a stream: \(SocketFailureText.describe(error))", beforeResponse: true))
        }
    }

    func close() {
        channel.close(promise: nil)
    }

    /// Connects to an `https://` URL offering h2 and HTTP/1.1 by ALPN, and speaks what the server
    /// chose: an h2 connection, or an HTTP/1.1 ``ReferenceConnection``.
    static func connect(to url: PlainURL, tls: NIOSSLContext, connectTimeout: Duration?, lookup: NameLookup = .withinConnectTimeout) async throws(ExchangeFailure) -> ReferenceLink {
        let negotiated = NIOLockedValueBox<EventLoopPromise<ReferenceLink>?>(nil)
        let goAway = NIOLockedValueBox<HTTP2ErrorCode?>(nil)
        let serverName = ServerName(url.host).sni
        let bootstrap = ReferenceConnection.bootstrap(connectTimeout: connectTimeout)
            .channelInitializer { channel in
                let promise = channel.eventLoop.makePromise(of: ReferenceLink.self)
                negotiated.withLockedValue { $0 = promise }
                return channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    let failure = HandshakeFailureRelay(promise: promise)
                    try sync.addHandler(try NIOSSLClientHandler(context: tls, serverHostname: serverName))
                    try sync.addHandler(failure)
                    try sync.addHandler(ApplicationProtocolNegotiationHandler { result, channel in
                        channel.eventLoop.makeCompletedFuture {
                            channel.pipeline.syncOperations.removeHandler(failure, promise: nil)
                            let link = try speak(result, on: channel, goAway: goAway)
                            promise.succeed(link)
                        }.flatMapErrorThrowing { error in
                            promise.fail(error)
                            throw error
                        }
                    })
                }
            }
        let channel: any Channel
        do {
            channel = try await lookup.connect(bootstrap, host: url.host, port: url.port).channel
        } catch {
            throw ExchangeFailure(kind: NIOErrorKind.kind(of: error) ?? .other, message: SocketFailureText.describe(error), beforeResponse: true)
        }
        guard let promise = negotiated.withLockedValue({ $0 }) else {
            channel.close(promise: nil)
            throw ExchangeFailure(kind: .other, message: "the connection was set up without TLS", beforeResponse: true)
        }
        do {
            return try await promise.futureResult.get()
        } catch {
            channel.close(promise: nil)
            throw ExchangeFailure(kind: NIOErrorKind.kind(of: error) ?? .reset, message: SocketFailureText.describe(error), beforeResponse: true)
        }
    }

    /// Sets up the channel for the protocol the server chose.
    private static func speak(_ result: ALPNResult, on channel: any Channel, goAway: NIOLockedValueBox<HTTP2ErrorCode?>) throws -> ReferenceLink {
        let sync = channel.pipeline.syncOperations
        guard case .negotiated(ApplicationProtocol.http2.rawValue) = result else {
            try sync.addHTTPClientHandlers(leftOverBytesStrategy: .fireError)
            let handler = ExchangeHandler()
            try sync.addHandler(handler)
            return .http1(ReferenceConnection(channel: channel, exchange: NIOLoopBound(handler, eventLoop: channel.eventLoop), localPort: channel.localAddress?.port))
        }
        let multiplexer = try sync.configureHTTP2Pipeline(mode: .client, connectionConfiguration: .init(), streamConfiguration: .init()) { pushed in
            pushed.close()  // no server push
        }
        try sync.addHandler(GoAwayWatcher(goAway: goAway))
        return .h2(ReferenceH2Connection(channel: channel, multiplexer: NIOLoopBound(multiplexer, eventLoop: channel.eventLoop), goAway: goAway))
    }
}

/// After the h2 handler: remembers the server's GOAWAY, and closes a connection the server
/// half-closed (an h2 connection has no use for half a connection).
private final class GoAwayWatcher: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    private let goAway: NIOLockedValueBox<HTTP2ErrorCode?>

    init(goAway: NIOLockedValueBox<HTTP2ErrorCode?>) { self.goAway = goAway }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .goAway(_, let code, _) = unwrapInboundIn(data).payload {
            goAway.withLockedValue { $0 = code }
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event { context.close(promise: nil) }
        context.fireUserInboundEventTriggered(event)
    }
}

/// Until ALPN's outcome: fails the negotiation's promise when the handshake fails or the
/// connection closes before it completed (ALPN's handler never runs then). Removed once it ran.
private final class HandshakeFailureRelay: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    private let promise: EventLoopPromise<ReferenceLink>

    init(promise: EventLoopPromise<ReferenceLink>) { self.promise = promise }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.fail(error)
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.fail(ChannelError.eof)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) { context.fireChannelRead(data) }
}
