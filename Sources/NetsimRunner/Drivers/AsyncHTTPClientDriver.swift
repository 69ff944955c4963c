import AsyncHTTPClient
import NIOSSL
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NetsimCore
import NetsimHTTP
import NetsimScenario

/// `async-http-client`: swift-server's AsyncHTTPClient, one `HTTPClient` (one pool) per run
/// (docs/drivers.md, "async-http-client").
///
/// - `timeout` → the request deadline (whole request) and `Timeout.read`; `connect_timeout` →
///   `Timeout.connect`;
/// - `pool` → `concurrentHTTP1ConnectionsPerHostSoftLimit`; `settings.idle_timeout` (a duration)
///   → the pool's idle timeout (AHC's default 60 s);
/// - `settings.retry_connect`: `false` turns off AHC's retrying of failed connects (by default
///   AHC retries them with backoff until the request's deadline);
/// - `retries` is ignored: AHC never retries a request on its own (logged when set);
/// - HTTP/1.1 only (the relay's upstream speaks HTTP/1.1).
///
/// `localPort`: AHC does not say which connection carried a request. The driver tags each
/// request with a private header; a handler put into every connection's pipeline (through
/// `http1_1ConnectionDebugInitializer`) removes the header before it is encoded and notes the
/// channel's local port for that request. Nothing of the tag reaches the wire.
public final class AsyncHTTPClientDriver: ClientDriver {
    public let name = "async-http-client"
    static let tagHeader = "x-netsim-driver-request"

    private let client: HTTPClient
    private let ports: PortBook
    private let deadline: Duration
    private let notes = ClientLog()

    /// - Parameter caFile: a CA certificate (PEM) to trust besides nothing else: a TLS run's CA.
    public convenience init(client: ClientSpec, seed: UInt64 = 0, trusting caFile: String? = nil) {
        self.init(config: DriverConfig(client, seed: seed), caFile: caFile)
    }

    init(config: DriverConfig, caFile: String? = nil) {
        let ports = PortBook()
        self.ports = ports
        deadline = config.timeout ?? .seconds(30)
        var configuration = HTTPClient.Configuration()
        // Over TLS AsyncHTTPClient negotiates h2 by ALPN, as it does with any HTTPS server; in
        // plaintext it speaks HTTP/1.1 (it has no h2c).
        configuration.httpVersion = caFile == nil ? .http1Only : .automatic
        if let caFile {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .file(caFile)
            configuration.tlsConfiguration = tls
        }
        configuration.timeout = HTTPClient.Configuration.Timeout(
            connect: (config.connectTimeout ?? config.timeout).map { .nanoseconds($0.nanoseconds) },
            read: config.timeout.map { .nanoseconds($0.nanoseconds) })
        if let idle = config.duration("idle_timeout") { configuration.connectionPool.idleTimeout = .nanoseconds(idle.nanoseconds) }
        if let pool = config.pool { configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = max(1, pool) }
        if config.settings["retry_connect"]?.lowercased() == "false" { configuration.connectionPool.retryConnectionEstablishment = false }
        configuration.http1_1ConnectionDebugInitializer = { channel in
            channel.eventLoop.submit {
                let sync = channel.pipeline.syncOperations
                let encoder = try sync.handler(type: HTTPRequestEncoder.self)
                try sync.addHandler(PortTagger(book: ports), position: .after(encoder))
            }
        }
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        var notes: [String] = []
        if let retries = config.retries, retries > 0 { notes.append("retries: \(retries) ignored: AsyncHTTPClient does not retry requests on its own") }
        for key in config.settings.keys.sorted() where !["idle_timeout", "retry_connect"].contains(key) {
            notes.append("unknown setting ignored: \(key)")
        }
        for note in notes { self.notes.note(note) }
    }

    public func ready(timeout: Duration) async throws {}

    public func shutdown() async { try? await client.shutdown() }

    public var log: String { get async { notes.contents } }

    public func perform(_ request: DriverRequest) async throws -> DriverResponse {
        var outgoing = HTTPClientRequest(url: request.url)
        outgoing.method = HTTPMethod(rawValue: request.method.uppercased())
        for header in request.headers { outgoing.headers.add(name: header.name, value: header.value) }
        outgoing.headers.add(name: Self.tagHeader, value: "\(request.id)")
        if let body = request.body { outgoing.body = .bytes(ByteBuffer(string: body)) }
        defer { ports.forget(request.id) }
        do {
            let response = try await client.execute(outgoing, timeout: .nanoseconds(deadline.nanoseconds))
            var buffer = try await response.body.collect(upTo: 256 << 20)
            let body = buffer.readBytes(length: buffer.readableBytes) ?? []
            let headers = response.headers.map { HTTPHeader($0.name, $0.value) }
            return ResponseBuilder.response(status: Int(response.status.code), headers: headers, body: body, localPort: ports.port(of: request.id))
        } catch {
            let message = String(reflecting: error)
            notes.note("\(request.label) \(request.method) \(request.url): \(message)")
            return ResponseBuilder.failure(Self.kind(of: error), message, localPort: ports.port(of: request.id))
        }
    }

    static func kind(of error: any Error) -> ErrorKind {
        if let client = error as? HTTPClientError {
            switch client {
            case .connectTimeout, .readTimeout, .writeTimeout, .deadlineExceeded, .getConnectionFromPoolTimeout: return .timeout
            case .remoteConnectionClosed: return .closedBeforeResponse
            default: break
            }
            let text = "\(client)".lowercased()
            if text.contains("ssl") || text.contains("tls") { return .tls }
            return .other
        }
        if let kind = NIOErrorKind.kind(of: error) { return kind }
        let text = String(reflecting: error).lowercased()
        if text.contains("ssl") || text.contains("tls") { return .tls }
        return .other
    }
}

/// Which local port carried which tagged request.
final class PortBook: Sendable {
    private let ports = NIOLockedValueBox<[Int: Int]>([:])

    func note(_ id: Int, _ port: Int?) { ports.withLockedValue { $0[id] = port } }
    func port(of id: Int) -> Int? { ports.withLockedValue { $0[id] } }
    func forget(_ id: Int) { ports.withLockedValue { $0[id] = nil } }
}

/// Sits between AHC's channel handler and the request encoder: takes the tag header off each
/// request head and notes the channel's local port for that request.
final class PortTagger: ChannelOutboundHandler, Sendable {
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart
    let book: PortBook

    init(book: PortBook) { self.book = book }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .head(var head) = unwrapOutboundIn(data), let tag = head.headers.first(name: AsyncHTTPClientDriver.tagHeader) else {
            context.write(data, promise: promise)
            return
        }
        head.headers.remove(name: AsyncHTTPClientDriver.tagHeader)
        if let id = Int(tag) { book.note(id, context.channel.localAddress?.port) }
        context.write(wrapOutboundOut(.head(head)), promise: promise)
    }
}
