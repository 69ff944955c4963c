import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// The app's HTTP client for its feed: AsyncHTTPClient, one pool, and the app's answer to the
/// lock-screen incident.
///
/// AsyncHTTPClient never retries a request by itself, and a pooled connection that the phone
/// (or a NAT) dropped while idle looks alive to it: after a long idle the next request goes
/// into a dead connection and fails with ECONNRESET — and so would one retry, on the next dead
/// pooled connection. So when an idempotent request fails that way, this client drops the
/// whole pool (every connection idle as long is suspect), starts a new one and retries once.
public actor FeedClient {
    public struct Response: Sendable {
        public var status: Int
        public var headers: [(String, String)]
        public var body: [UInt8]
    }

    private var http: HTTPClient
    /// Which pool a request went out on: only a failure on the current pool replaces it.
    private var generation = 0
    private let timeout: TimeAmount
    private let recoversDeadConnections: Bool

    /// - Parameters:
    ///   - timeout: each request's deadline.
    ///   - recoversDeadConnections: the recovery above (off: AsyncHTTPClient's behaviour alone).
    public init(timeout: Duration = .seconds(10), recoversDeadConnections: Bool = true) {
        self.timeout = .nanoseconds(Int64(timeout.components.seconds) * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000)
        self.recoversDeadConnections = recoversDeadConnections
        http = Self.makeClient()
    }

    private static func makeClient() -> HTTPClient {
        HTTPClient(eventLoopGroupProvider: .singleton)
    }

    /// The feed's items (`{"items":[…]}` at `base`/feed).
    public func items(from base: URL) async throws -> [Int] {
        let response = try await send(method: "GET", url: base.appendingPathComponent("feed"))
        struct Feed: Decodable { var items: [Int] }
        return try JSONDecoder().decode(Feed.self, from: Data(response.body)).items
    }

    /// Sends one request with the app's policy.
    public func send(method: String, url: URL, headers: [(String, String)] = [], body: [UInt8]? = nil) async throws -> Response {
        let used = generation
        do {
            return try await attempt(method: method, url: url, headers: headers, body: body)
        } catch where recoversDeadConnections && ["GET", "HEAD", "PUT", "DELETE", "OPTIONS"].contains(method) && Self.deadConnection(error) {
            if used == generation { replacePool() }
            return try await attempt(method: method, url: url, headers: headers, body: body)
        }
    }

    private func attempt(method: String, url: URL, headers: [(String, String)], body: [UInt8]?) async throws -> Response {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = HTTPMethod(rawValue: method)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await http.execute(request, timeout: timeout)
        let bytes = try await response.body.collect(upTo: 16 << 20)
        return Response(status: Int(response.status.code), headers: response.headers.map { ($0.name, $0.value) }, body: Array(buffer: bytes))
    }

    /// A connection that died under the request before any answer: reset, broken pipe, or
    /// closed by the peer.
    static func deadConnection(_ error: any Error) -> Bool {
        if let client = error as? HTTPClientError, client == .remoteConnectionClosed { return true }
        if let io = error as? IOError { return [ECONNRESET, EPIPE].contains(io.errnoCode) }
        return false
    }

    private func replacePool() {
        let old = http
        http = Self.makeClient()
        generation += 1
        Task { try? await old.shutdown() }
    }

    /// Closes the pool.
    public func shutdown() async {
        try? await http.shutdown()
    }
}
