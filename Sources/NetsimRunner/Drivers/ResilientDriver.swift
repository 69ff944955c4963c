import Foundation
import NIOSSL
import NetsimCore
import NetsimHTTP
import NetsimScenario
import NIOConcurrencyHelpers

/// `resilient`: a test instrument that applies the fixes for the incidents. A small, honest
/// HTTP/1.1 client over SwiftNIO (docs/drivers.md, "resilient"):
///
/// - before reusing a pooled connection it checks it (open, no FIN from the server, nothing
///   unsolicited arrived) and drops it otherwise; idle connections go after `idle_timeout`
///   (default 30 s); when a reused connection fails at the connection level, every other idle
///   connection to that host is dropped too (they were opened before the same network change);
/// - retries (`retries`, default 1) only idempotent requests, only after a reset, a close
///   before any response or a refused connect, and always on a fresh connection; a POST (any
///   non-idempotent method) is never replayed: its failure is reported;
/// - backs off before each retry: `backoff` (default 100 ms) × 2^(retry−1), capped at
///   `backoff_cap` (default 5 s), times a jitter factor in [0.5, 1) drawn from the run's seed;
/// - honours `Retry-After` on a `503` or `429` to an idempotent request: waits that long and
///   retries (within `retries`), unless it is longer than `retry_after_cap` (default 10 s), when
///   the answer is reported as it is;
/// - caches only `200` GET responses with an explicit `Cache-Control: max-age` (never heuristic
///   freshness, never an error page) and only bodies that pass validation (length matches
///   `Content-Length`; a JSON content type parses as JSON);
/// - notices captive portals (``CaptivePortalCheck``): an answer that looks wrong — a redirect to
///   another host, `511`, an HTML page where HTML was not accepted — is checked with a
///   connectivity probe; a probe not answered `204` (or a request to a well-known probe path
///   answered otherwise than an open network does) → `error: other`, message `captive portal: …`.
public final class ResilientDriver: ClientDriver {
    public let name = "resilient (netsim reference client)"

    private let config: DriverConfig
    private let pool: ConnectionPool
    private let cache = ResponseCache()
    private let idleTimeout: Duration
    private let backoff: Duration
    private let backoffCap: Duration
    private let retryAfterCap: Duration
    /// The backoff jitter, drawn by concurrent requests in turn.
    private let random: NIOLockedValueBox<SeededRandom>
    private let notes = ClientLog()

    /// - Parameter caFile: the CA to trust for `https://` (a TLS run's); nil: the system's.
    public convenience init(client: ClientSpec, seed: UInt64 = 0, trusting caFile: String? = nil) {
        self.init(config: DriverConfig(client, seed: seed, caFile: caFile))
    }

    private let tlsContext: LazyTLSContext

    init(config: DriverConfig) {
        self.config = config
        tlsContext = LazyTLSContext(caFile: config.caFile)
        pool = ConnectionPool(maxIdle: config.pool ?? 10)
        idleTimeout = config.duration("idle_timeout") ?? .seconds(30)
        backoff = config.duration("backoff") ?? .milliseconds(100)
        backoffCap = config.duration("backoff_cap") ?? .seconds(5)
        retryAfterCap = config.duration("retry_after_cap") ?? .seconds(10)
        random = NIOLockedValueBox(SeededRandom(seed: config.seed).derived(SeededRandom.label("resilient-backoff")))
    }

    private func tls() throws(ExchangeFailure) -> NIOSSLContext { try tlsContext.get() }

    public func ready(timeout: Duration) async throws {}

    public func shutdown() async { pool.closeAll() }

    public var log: String { get async { notes.contents } }

    private func note(_ line: String) { notes.note(line) }

    /// The pause before retry number `retry` (1, 2, …).
    func delay(beforeRetry retry: Int) -> Duration {
        let exponent = min(max(retry - 1, 0), 30)
        let base = min(backoff * (1 << exponent), backoffCap)
        let jitter = random.withLockedValue { 0.5 + 0.5 * $0.nextUnit() }
        return base * jitter
    }

    public func perform(_ request: DriverRequest) async throws -> DriverResponse {
        guard let url = PlainURL(request.url) else {
            return ResponseBuilder.failure(.other, "resilient: only http:// and https:// URLs are supported: \(request.url)")
        }
        pool.expire(olderThan: idleTimeout)
        let method = request.method.uppercased()
        if method == "GET", let cached = cache.fresh(request.url) {
            note("#\(request.id) \(method) \(url.target): served from cache")
            return ResponseBuilder.response(status: cached.status, headers: cached.headers, body: cached.body, localPort: nil)
        }
        let key = "\(url.host):\(url.port)"
        let retries = idempotentMethods.contains(method) ? max(0, config.retries ?? 1) : 0
        var attempt = 0
        var serverPause: Duration?
        while true {
            if attempt > 0 {
                let pause = serverPause ?? delay(beforeRetry: attempt)
                serverPause = nil
                note("#\(request.id) backing off \(pause.compactDescription) before retry \(attempt)")
                try? await Task.sleep(for: pause)
            }
            var connection: ReferenceConnection?
            var reused = false
            if attempt == 0 {
                while let pooled = pool.take(key) {
                    if await pooled.looksAlive() {
                        connection = pooled
                        reused = true
                        break
                    }
                    note("#\(request.id) dropping dead pooled connection (port \(pooled.localPort ?? 0))")
                    pooled.close()
                }
            }
            if connection == nil {
                do {
                    connection = try await ReferenceConnection.connect(to: url, tls: url.secure ? try tls() : nil, connectTimeout: config.connectTimeout ?? config.timeout)
                } catch {
                    note("#\(request.id) attempt \(attempt + 1): connect failed: \(error.message)")
                    // Refused, or reset as it was made: nothing was sent, so trying again is safe.
                    if attempt < retries, error.kind == .refused || error.kind == .reset {
                        attempt += 1
                        continue
                    }
                    return ResponseBuilder.failure(error.kind, error.message)
                }
            }
            guard let connection else { continue }
            let result = await connection.exchange(method: method, url: url, headers: request.headers, body: request.body, timeout: config.timeout)
            switch result {
            case .success(let response):
                note("#\(request.id) attempt \(attempt + 1): \(response.status) on port \(connection.localPort ?? 0)\(reused ? " (reused)" : "")")
                if response.header("Connection")?.lowercased() == "close" { connection.close() } else { pool.put(key, connection) }
                if let portal = await captivePortal(response, url: url, request: request) {
                    return ResponseBuilder.failure(.other, portal, localPort: connection.localPort)
                }
                if let wait = Self.retryAfter(response), attempt < retries {
                    guard wait <= retryAfterCap else {
                        note("#\(request.id) \(response.status) asks to retry after \(wait.compactDescription), beyond retry_after_cap: reporting it")
                        return ResponseBuilder.response(status: response.status, headers: response.headers, body: response.body, localPort: connection.localPort)
                    }
                    note("#\(request.id) \(response.status) with Retry-After: waiting \(wait.compactDescription) as asked")
                    serverPause = wait
                    attempt += 1
                    continue
                }
                if method == "GET", let lifetime = Self.cacheLifetime(response) {
                    cache.store(request.url, response, for: lifetime)
                }
                return ResponseBuilder.response(status: response.status, headers: response.headers, body: response.body, localPort: connection.localPort)
            case .failure(let failure):
                note("#\(request.id) attempt \(attempt + 1): \(failure.kind.rawValue) on port \(connection.localPort ?? 0)\(reused ? " (reused)" : ""): \(failure.message)")
                connection.close()
                let connectionLevel = failure.kind == .reset || failure.kind == .closedBeforeResponse
                if reused, connectionLevel { pool.drain(key) }
                if attempt < retries, connectionLevel, failure.beforeResponse {
                    attempt += 1
                    continue
                }
                return ResponseBuilder.failure(failure.kind, failure.message, localPort: connection.localPort)
            }
        }
    }

    /// Only explicit freshness, only a 200 whose body passes validation.
    static func cacheLifetime(_ response: RawResponse) -> Duration? {
        guard response.status == 200, let control = response.header("Cache-Control"), !ResponseCache.forbids(control),
              let seconds = ResponseCache.maxAge(control), seconds > 0, valid(response) else { return nil }
        return .seconds(seconds)
    }

    static func valid(_ response: RawResponse) -> Bool {
        if let length = response.header("Content-Length").flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) }), length != response.body.count {
            return false
        }
        if response.header("Content-Type")?.lowercased().contains("json") == true {
            return (try? JSONSerialization.jsonObject(with: Data(response.body), options: [.fragmentsAllowed])) != nil
        }
        return true
    }

    /// `Retry-After` of a 503 or 429 (seconds or an HTTP-date), as a wait from now.
    static func retryAfter(_ response: RawResponse) -> Duration? {
        guard response.status == 503 || response.status == 429,
              let value = response.header("Retry-After")?.trimmingCharacters(in: .whitespaces) else { return nil }
        if let seconds = Int(value), seconds >= 0 { return .seconds(seconds) }
        guard let date = ResponseCache.date(value) else { return nil }
        return .milliseconds(Int64(max(0, date.timeIntervalSinceNow) * 1000))
    }

    /// `captive portal: …` when the answer is a portal's (probing when it only looks like one).
    private func captivePortal(_ response: RawResponse, url: PlainURL, request: DriverRequest) async -> String? {
        if let failed = CaptivePortalCheck.failedProbe(response, url: url) {
            note("#\(request.id) \(failed)")
            return failed
        }
        guard let suspicion = CaptivePortalCheck.suspicion(response, url: url, requestHeaders: request.headers) else { return nil }
        let (verdict, line) = await CaptivePortalCheck.confirm(
            suspicion, url: url, connectTimeout: config.connectTimeout, timeout: config.timeout)
        note("#\(request.id) \(line)")
        return verdict
    }
}
