import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import NetsimHTTP
import NetsimRelay
import NetsimScenario
import NetsimTLS

/// A complete HTTP/1.1 response as the reference clients read it.
struct RawResponse: Sendable {
    var status: Int
    var headers: [HTTPHeader]
    var body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

/// Why an exchange on a connection failed.
struct ExchangeFailure: Error, Sendable {
    var kind: ErrorKind
    var message: String
    /// Nothing of a response had arrived (so the request may not have been processed).
    var beforeResponse: Bool
    /// On h2: the server reset this request's stream with this code (the connection lives on).
    var streamReset: HTTP2ErrorCode? = nil
}

/// The request head both HTTP versions send (on h2, `Host` becomes `:authority`).
enum ReferenceRequest {
    static func head(method: String, url: PlainURL, headers: [HTTPHeader], body: String?) -> HTTPRequestHead {
        var head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: method), uri: url.target)
        head.headers.add(name: "Host", value: url.authority)
        head.headers.add(name: "User-Agent", value: "netsim-reference")
        for header in headers { head.headers.add(name: header.name, value: header.value) }
        if let body { head.headers.replaceOrAdd(name: "Content-Length", value: "\(body.utf8.count)") }
        return head
    }
}

/// A reference client's connection to an origin: HTTP/1.1 (one request at a time, pooled) or
/// h2 (a stream per request, shared).
enum ReferenceLink: Sendable {
    case http1(ReferenceConnection)
    case h2(ReferenceH2Connection)

    var localPort: Int? {
        switch self {
        case .http1(let connection): connection.localPort
        case .h2(let connection): connection.localPort
        }
    }

    /// " on port N" for a log line, or nothing when the port was not known (a connection reset
    /// as it was made): never a made-up port 0.
    var onPort: String { localPort.map { " on port \($0)" } ?? "" }

    func exchange(method: String, url: PlainURL, headers: [HTTPHeader], body: String?, timeout: Duration?) async -> Result<RawResponse, ExchangeFailure> {
        switch self {
        case .http1(let connection): await connection.exchange(method: method, url: url, headers: headers, body: body, timeout: timeout)
        case .h2(let connection): await connection.exchange(method: method, url: url, headers: headers, body: body, timeout: timeout)
        }
    }

    func close() {
        switch self {
        case .http1(let connection): connection.close()
        case .h2(let connection): connection.close()
        }
    }
}

/// One keep-alive TCP connection of the reference clients: NIOHTTP1's client codec plus a handler
/// that answers one request at a time. The remote may half-close (a FIN): the channel then stays
/// open, so a client that does not look (`naive`) really writes its next request into it.
final class ReferenceConnection: Sendable {
    let channel: any Channel
    let localPort: Int?
    /// The handler lives on the channel's event loop; requests reach it from there.
    private let exchange: NIOLoopBound<ExchangeHandler>

    init(channel: any Channel, exchange: NIOLoopBound<ExchangeHandler>, localPort: Int?) {
        self.channel = channel
        self.exchange = exchange
        self.localPort = localPort
    }

    /// The reference clients' TCP: no Nagle, and a server's FIN leaves the connection half-open
    /// (the client decides what to make of it).
    static func bootstrap(connectTimeout: Duration?) -> ClientBootstrap {
        ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.nanoseconds((connectTimeout ?? .seconds(10)).nanoseconds))
            .channelOption(.allowRemoteHalfClosure, value: true)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
    }

    /// A plaintext connection (`http://`); `https://` goes through ``ReferenceH2Connection/connect(to:tls:connectTimeout:)``,
    /// which speaks what ALPN chose.
    static func connect(to url: PlainURL, connectTimeout: Duration?, lookup: NameLookup = .withinConnectTimeout) async throws(ExchangeFailure) -> ReferenceConnection {
        let (host, port) = (url.host, url.port)
        let bootstrap = Self.bootstrap(connectTimeout: connectTimeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers(leftOverBytesStrategy: .fireError)
                    try channel.pipeline.syncOperations.addHandler(ExchangeHandler())
                }
            }
        let (channel, localPort): (any Channel, Int?)
        do {
            (channel, localPort) = try await lookup.connect(bootstrap, host: host, port: port)
        } catch {
            throw ExchangeFailure(kind: NIOErrorKind.kind(of: error) ?? .other, message: SocketFailureText.describe(error), beforeResponse: true)
        }
        do {
            let handler = try await channel.eventLoop.submit {
                NIOLoopBound(try channel.pipeline.syncOperations.handler(type: ExchangeHandler.self), eventLoop: channel.eventLoop)
            }.get()
            return ReferenceConnection(channel: channel, exchange: handler, localPort: localPort)
        } catch {
            // Connected, and already torn down (its handlers are gone): reset as it was made.
            channel.close(promise: nil)
            throw ExchangeFailure(kind: .reset, message: "the connection was reset as soon as it was made (\(error))", beforeResponse: true)
        }
    }

    /// Sends one request and reads its response, giving up (and closing) after `timeout`.
    func exchange(method: String, url: PlainURL, headers: [HTTPHeader], body: String?, timeout: Duration?) async -> Result<RawResponse, ExchangeFailure> {
        let head = ReferenceRequest.head(method: method, url: url, headers: headers, body: body)
        let bodyBytes = body.map { Array($0.utf8) }
        let exchange = self.exchange
        let channel = self.channel
        let limit = TimeAmount.nanoseconds((timeout ?? .seconds(30)).nanoseconds)
        let future = channel.eventLoop.flatSubmit {
            exchange.value.start(head: head, body: bodyBytes, channel: channel, timeout: limit)
        }
        do {
            return .success(try await future.get())
        } catch let failure as ExchangeFailure {
            return .failure(failure)
        } catch {
            return .failure(ExchangeFailure(kind: NIOErrorKind.kind(of: error) ?? .other, message: SocketFailureText.describe(error), beforeResponse: true))
        }
    }

    /// Whether the connection still looks usable from here: open, not half-closed by the server,
    /// and nothing unsolicited arrived while it was idle. (A connection whose peer silently
    /// vanished still looks usable: only sending on it tells.)
    func looksAlive() async -> Bool {
        let exchange = self.exchange
        let channel = self.channel
        return (try? await channel.eventLoop.submit { channel.isActive && exchange.value.idleAndClean }.get()) ?? false
    }

    func close() {
        channel.close(promise: nil)
    }
}

/// Answers one request at a time on its channel. Runs on the channel's event loop only (so it is
/// not `Sendable`: other threads reach it through a `NIOLoopBound`).
final class ExchangeHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private var pending: EventLoopPromise<RawResponse>?
    private var timer: Scheduled<Void>?
    private var head: HTTPResponseHead?
    private var body: [UInt8] = []
    private var inputClosed = false
    private var unsolicited = false
    private var closed = false

    var idleAndClean: Bool { pending == nil && !inputClosed && !unsolicited && !closed }

    func start(head requestHead: HTTPRequestHead, body bodyBytes: [UInt8]?, channel: any Channel, timeout: TimeAmount) -> EventLoopFuture<RawResponse> {
        let promise = channel.eventLoop.makePromise(of: RawResponse.self)
        guard pending == nil else {
            promise.fail(ExchangeFailure(kind: .other, message: "connection busy", beforeResponse: true))
            return promise.futureResult
        }
        guard !closed else {
            promise.fail(ExchangeFailure(kind: .reset, message: "the connection was already closed (\(ChannelError.ioOnClosedChannel))", beforeResponse: true))
            return promise.futureResult
        }
        pending = promise
        head = nil
        body = []
        let loop = channel.eventLoop.assumeIsolated()
        timer = loop.scheduleTask(in: timeout) { [self] in
            finish(.failure(ExchangeFailure(kind: .timeout, message: "no complete response within \(timeout.nanoseconds / 1_000_000) ms", beforeResponse: head == nil)))
            channel.close(promise: nil)
        }
        let write = channel.eventLoop.makePromise(of: Void.self)
        write.futureResult.assumeIsolated().whenFailure { [self] error in
            finish(.failure(ExchangeFailure(kind: NIOErrorKind.kind(of: error) ?? .other, message: "writing the request: \(SocketFailureText.describe(error))", beforeResponse: true)))
        }
        channel.write(HTTPClientRequestPart.head(requestHead), promise: nil)
        if let bodyBytes, !bodyBytes.isEmpty {
            channel.write(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: bodyBytes))), promise: nil)
        }
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: write)
        return promise.futureResult
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard pending != nil else {
            unsolicited = true
            return
        }
        switch unwrapInboundIn(data) {
        case .head(let responseHead):
            head = responseHead
        case .body(var buffer):
            body += buffer.readBytes(length: buffer.readableBytes) ?? []
        case .end:
            guard let responseHead = head else { return }
            let headers = responseHead.headers.map { HTTPHeader($0.name, $0.value) }
            finish(.success(RawResponse(status: Int(responseHead.status.code), headers: headers, body: body)))
            if responseHead.headers[canonicalForm: "connection"].contains(where: { $0.lowercased() == "close" }) {
                inputClosed = true
                context.close(promise: nil)
            }
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            inputClosed = true
            failIfPending(closedBy: "the server closed the connection (FIN)")
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let reset = error as? NIOHTTP2Errors.StreamClosed {
            // h2: the server reset this stream; the connection and its other streams live on.
            finish(.failure(ExchangeFailure(kind: .reset, message: "the server reset the stream (\(reset.errorCode.rfcName))",
                                            beforeResponse: head == nil, streamReset: reset.errorCode)))
        } else if let kind = NIOErrorKind.kind(of: error) {
            finish(.failure(ExchangeFailure(kind: kind, message: SocketFailureText.describe(error), beforeResponse: head == nil)))
        } else if let parse = error as? HTTPParserError, parse != .invalidEOFState {
            // Bytes that are not HTTP/1.1 (garbage): the client's parse error, kind "other"
            // (docs/drivers.md), as urlsession and async-http-client classify it.
            finish(.failure(ExchangeFailure(kind: .other, message: "the answer is not HTTP/1.1 (\(error))", beforeResponse: head == nil)))
        } else {
            // EOF in the middle of a message.
            failIfPending(closedBy: SocketFailureText.describe(error))
        }
        closed = true
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        closed = true
        failIfPending(closedBy: "the connection closed")
        context.fireChannelInactive()
    }

    private func failIfPending(closedBy reason: String) {
        guard pending != nil else { return }
        if head == nil {
            finish(.failure(ExchangeFailure(kind: .closedBeforeResponse, message: reason + " before any response", beforeResponse: true)))
        } else {
            finish(.failure(ExchangeFailure(kind: .other, message: reason + " in the middle of the response (\(body.count) body bytes read)", beforeResponse: false)))
        }
    }

    private func finish(_ result: Result<RawResponse, ExchangeFailure>) {
        guard let promise = pending else { return }
        pending = nil
        timer?.cancel()
        timer = nil
        switch result {
        case .success(let response): promise.succeed(response)
        case .failure(let failure): promise.fail(failure)
        }
    }
}

/// Idle keep-alive connections per `host:port`, most recently returned last.
final class ConnectionPool: Sendable {
    private struct Idle {
        var connection: ReferenceConnection
        /// When it was returned: its last use.
        var since: ContinuousClock.Instant
    }

    private let idle = NIOLockedValueBox<[String: [Idle]]>([:])
    let maxIdle: Int

    init(maxIdle: Int) { self.maxIdle = max(1, maxIdle) }

    /// Takes the most recently used idle connection (LIFO, like urllib3 and most pools).
    func take(_ key: String) -> ReferenceConnection? {
        idle.withLockedValue { $0[key]?.popLast()?.connection }
    }

    /// Returns a connection for reuse; beyond `maxIdle` it is closed instead.
    func put(_ key: String, _ connection: ReferenceConnection) {
        let kept = idle.withLockedValue { idle -> Bool in
            if idle[key, default: []].count >= maxIdle { return false }
            idle[key, default: []].append(Idle(connection: connection, since: .now))
            return true
        }
        if !kept { connection.close() }
    }

    /// Closes idle connections older than `age` since their last use.
    func expire(olderThan age: Duration) {
        let now = ContinuousClock.now
        let old = idle.withLockedValue { idle -> [Idle] in
            var old: [Idle] = []
            for (key, list) in idle {
                old += list.filter { now - $0.since >= age }
                idle[key] = list.filter { now - $0.since < age }
            }
            return old
        }
        for entry in old { entry.connection.close() }
    }

    /// Closes every idle connection to `key`.
    func drain(_ key: String) {
        let all = idle.withLockedValue { $0.removeValue(forKey: key) ?? [] }
        for entry in all { entry.connection.close() }
    }

    func closeAll() {
        let all = idle.withLockedValue { idle -> [Idle] in
            defer { idle.removeAll() }
            return idle.values.flatMap { $0 }
        }
        for entry in all { entry.connection.close() }
    }
}
