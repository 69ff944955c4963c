import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NetsimAccept
import NetsimCore

/// What ``APIServer`` serves: the Toxiproxy API (`netsim serve`) or only `/metrics` (`netsim relay --metrics`).
public protocol APIResponder: AnyObject, Sendable {
    func handle(_ request: APIRequest) async -> APIResponse
    /// The server stopped: stop whatever the responder runs.
    func shutdown() async
}

/// Serves an ``APIResponder`` (``ToxiproxyAPI``, ``MetricsEndpoint``) over HTTP/1.1.
///
/// ```swift
/// let server = APIServer(api: ToxiproxyAPI())
/// let address = try await server.start(host: "127.0.0.1", port: 8474)
/// ...
/// await server.stop()
/// ```
// `@unchecked Sendable`: `channel` is set by `start` and read by `stop`, which callers never run concurrently.
public final class APIServer: @unchecked Sendable {
    public let api: any APIResponder
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private var channel: (any Channel)?

    /// Diagnostics: each request served (`--log-level debug`).
    static let logger = Logger(label: "netsim.api")

    /// Request bodies above this size are refused with 413.
    static let maximumBody = 1 << 20

    /// How long a connection may take over a request, and stay idle.
    let deadlines: APIDeadlines

    public init(api: any APIResponder, deadlines: APIDeadlines = APIDeadlines()) {
        self.api = api
        self.deadlines = deadlines
    }

    /// Binds and returns the bound address (the real port when `port` is 0).
    @discardableResult
    public func start(host: String = "127.0.0.1", port: Int = 8474) async throws -> Endpoint {
        let (api, deadlines) = (self.api, self.deadlines)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .serverChannelInitializer { channel in  // out of descriptors, an accept waits 1 s, not spins
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(AcceptBackoff()) }
            }
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let watch = APIConnectionDeadlines(deadlines: deadlines)
                    try channel.pipeline.syncOperations.addHandler(watch)  // before the decoder: it sees a head begin
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(APIHandler(api: api, deadlines: watch))
                }
            }
            .bind(host: host, port: port)
            .get()
        self.channel = channel
        let bound = Endpoint(host: host, port: channel.localAddress?.port ?? port)
        Self.logger.debug("listening", metadata: ["address": "\(bound)"])
        return bound
    }

    /// Stops listening, stops the responder (every proxy) and shuts the event loops down.
    public func stop() async {
        try? await channel?.close()
        channel = nil
        await api.shutdown()
        try? await group.shutdownGracefully()
    }
}

/// Collects one request, hands it to the API, writes the answer.
final class APIHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let api: any APIResponder
    private let deadlines: APIConnectionDeadlines?
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var tooLarge = false

    init(api: any APIResponder, deadlines: APIConnectionDeadlines? = nil) {
        self.api = api
        self.deadlines = deadlines
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let h):
            head = h
            body = []
            tooLarge = false
            // A declared body over the limit is refused now, not after it was sent (or never
            // was: QA 59 held such a connection open).
            if let length = h.headers.first(name: "Content-Length").flatMap(Int.init), length > APIServer.maximumBody {
                head = nil
                write(.error(APIError(413, "request body larger than \(APIServer.maximumBody) bytes")), keepAlive: false, context: context)
                return
            }
            // As Go's net/http (Toxiproxy's) does: curl waited 1 s for it before each body (QA 59).
            if h.headers.first(name: "Expect")?.lowercased() == "100-continue" {
                context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: h.version, status: .continue))), promise: nil)
            }
        case .body(let buffer):
            if body.count + buffer.readableBytes > APIServer.maximumBody {
                tooLarge = true
            } else {
                body += buffer.readableBytesView
            }
        case .end:
            guard let head else { return }
            self.head = nil
            deadlines?.requestReceived()
            let keepAlive = head.isKeepAlive
            if tooLarge {
                write(.error(APIError(413, "request body larger than \(APIServer.maximumBody) bytes")), keepAlive: false, context: context)
                return
            }
            let request = APIRequest(
                method: head.method.rawValue, uri: head.uri,
                headers: head.headers.map { ($0.name, $0.value) }, body: body)
            body = []
            let api = self.api
            let promise = context.eventLoop.makePromise(of: APIResponse.self)
            promise.completeWithTask {
                let response = await api.handle(request)
                APIServer.logger.debug("request", metadata: ["method": "\(request.method)", "uri": "\(request.uri)", "status": "\(response.status)"])
                return response
            }
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            promise.futureResult.whenSuccess { response in
                let (handler, context) = bound.value
                handler.write(response, keepAlive: keepAlive, context: context)
            }
        }
    }

    private func write(_ response: APIResponse, keepAlive: Bool, context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: response.contentType)
        headers.add(name: "Content-Length", value: String(response.body.count))
        // RFC 9110 11.6.1: a 401 says how to authenticate; the API's one scheme is a bearer token.
        if response.status == 401 { headers.add(name: "WWW-Authenticate", value: "Bearer") }
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        let head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: response.status), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if !response.body.isEmpty {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: response.body)))), promise: nil)
        }
        let done = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: done)
        deadlines?.requestAnswered()
        if !keepAlive {
            let channel = context.channel
            done.futureResult.whenComplete { _ in channel.close(promise: nil) }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Malformed HTTP is answered with 400 by NIO's HTTPServerProtocolErrorHandler; anything else closes.
        APIServer.logger.debug("closing an API connection after an error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }
}
