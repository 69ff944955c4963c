import Foundation
import NIOConcurrencyHelpers
import NetsimCore
import NetsimHTTP
import NetsimScenario

/// `naive`: a test instrument that reproduces the client flaws behind the incidents, on purpose.
/// An honest, small HTTP/1.1 and h2 client over SwiftNIO (docs/drivers.md, "naive"):
///
/// - keeps idle pooled connections for 60 s whatever the server does — it never looks whether
///   the server closed one (a FIN leaves the connection half-open and it writes into it);
/// - over TLS offers h2 and HTTP/1.1 by ALPN; its one h2 connection per origin takes every
///   request for the whole run, whatever happened to it — a GOAWAY, a reset, a dead socket;
/// - on any failure — and on any `5xx` answer — retries (`retries`, default 1) at once, with no
///   backoff and no regard for `Retry-After`, on the next pooled connection (LIFO; on h2 the same
///   connection), whatever the method — so after a network change its retry meets another dead
///   connection, a POST may reach the server twice (also after an h2 stream reset with
///   INTERNAL_ERROR), and an outage gets a retry storm;
/// - caches `200` GET responses by heuristic freshness: `max-age` when given, otherwise 10% of
///   `Date − Last-Modified` (so an error page served as a 200 with an old `Last-Modified` sticks);
/// - counts the host name's lookup against its connect timeout (SwiftNIO's default), so a
///   resolver slower than that timeout makes every connect fail;
/// - believes whatever page it gets (redirects and login pages are answers), and reports a
///   refused certificate as the TLS error it got, never asking whether a portal is in the way.
public final class NaiveDriver: ClientDriver {
    public let name = "naive (netsim reference client)"
    /// How long an idle pooled connection is kept, whatever happened to it.
    static let keepIdle: Duration = .seconds(60)

    private let config: DriverConfig
    private let connector: ReferenceConnector
    private let cache = ResponseCache()
    private let notes = ClientLog()

    /// - Parameter caFile: the CA to trust for `https://` (a TLS run's); nil: the system's.
    public convenience init(client: ClientSpec, seed: UInt64 = 0, trusting caFile: String? = nil) {
        self.init(config: DriverConfig(client, seed: seed, caFile: caFile))
    }

    init(config: DriverConfig) {
        self.config = config
        connector = ReferenceConnector(config: config, lookup: .withinConnectTimeout)
    }

    public func ready(timeout: Duration) async throws {}

    public func shutdown() async { connector.closeAll() }

    public var log: String { get async { notes.contents } }

    private func note(_ line: String) { notes.note(line) }

    public func perform(_ request: DriverRequest) async throws -> DriverResponse {
        guard let url = PlainURL(request.url) else {
            return ResponseBuilder.failure(.other, "naive: only http:// and https:// URLs are supported: \(request.url)")
        }
        connector.pool.expire(olderThan: Self.keepIdle)
        let method = request.method.uppercased()
        if method == "GET", let cached = cache.answer(request.url) {
            note("\(request.label) \(method) \(url.target): served from cache")
            return cached
        }
        let key = "\(url.host):\(url.port)"
        let retries = max(0, config.retries ?? 1)
        var attempt = 0
        while true {
            let link: ReferenceLink
            if let pooled = connector.pool.take(key) {
                link = .http1(pooled)
            } else {
                do {
                    // Its h2 connection is used whatever happened to it (a GOAWAY, a reset).
                    link = try await connector.link(to: url, key: key, reusable: { _ in true }).link
                } catch {
                    note("\(request.label) attempt \(attempt + 1): connect failed: \(error.message)")
                    if attempt < retries {
                        attempt += 1
                        continue
                    }
                    return ResponseBuilder.failure(error.kind, error.message)
                }
            }
            let result = await link.exchange(method: method, url: url, headers: request.headers, body: request.body, timeout: config.timeout)
            switch result {
            case .success(let response):
                note("\(request.label) attempt \(attempt + 1): \(response.status)\(link.onPort)")
                connector.release(link, key: key, after: response)
                if response.status >= 500, attempt < retries {
                    attempt += 1
                    continue
                }
                if method == "GET", response.status == 200, let lifetime = Self.freshness(response) {
                    cache.store(request.url, response, for: lifetime)
                }
                return ResponseBuilder.response(status: response.status, headers: response.headers, body: response.body, localPort: link.localPort)
            case .failure(let failure):
                note("\(request.label) attempt \(attempt + 1): \(failure.kind.rawValue)\(link.onPort): \(failure.message)")
                if case .http1(let connection) = link { connection.close() }
                if attempt < retries {
                    attempt += 1
                    continue
                }
                return ResponseBuilder.failure(failure.kind, failure.message, localPort: link.localPort)
            }
        }
    }

    /// Heuristic freshness (RFC 9111 §4.2.2 allows 10% of the age since Last-Modified).
    static func freshness(_ response: RawResponse) -> Duration? {
        if let control = response.header("Cache-Control") {
            if ResponseCache.forbids(control) { return nil }
            if let seconds = ResponseCache.maxAge(control) { return .seconds(seconds) }
            return nil
        }
        guard let modified = response.header("Last-Modified").flatMap(ResponseCache.date) else { return nil }
        let date = response.header("Date").flatMap(ResponseCache.date) ?? Date()
        let age = date.timeIntervalSince(modified)
        guard age > 0 else { return nil }
        return .milliseconds(Int64(age * 100))  // 10% of the age, in ms
    }
}
