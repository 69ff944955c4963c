import Foundation
import NetsimCore
import NetsimHTTP
import NetsimScenario
import NIOConcurrencyHelpers

/// `resilient`: a test instrument that applies the fixes for the incidents. A small, honest
/// HTTP/1.1 and h2 client over SwiftNIO (docs/drivers.md, "resilient"):
///
/// - over TLS offers h2 and HTTP/1.1 by ALPN; its h2 connection per origin is shared while it
///   takes new streams: after a GOAWAY new requests go to a new connection (streams in flight
///   finish on the old one);
/// - before reusing a pooled connection it checks it (open, no FIN from the server, nothing
///   unsolicited arrived) and drops it otherwise; idle connections go after `idle_timeout`
///   (default 30 s); when a reused connection fails at the connection level, every other idle
///   connection to that host is dropped too (they were opened before the same network change);
/// - retries (`retries`, default 1) only idempotent requests, only after a reset, a close
///   before any response or a refused connect, and always on a fresh connection; a POST (any
///   non-idempotent method) is never replayed: its failure is reported — except after an h2
///   REFUSED_STREAM, which guarantees nothing was processed (any other stream reset: idempotent
///   methods only; the h2 connection stays);
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
///   answered otherwise than an open network does) → `error: other`, message `captive portal: …`;
///   a refused certificate is probed too, and stays a `tls` error, its message then starting
///   `captive portal:`;
/// - looks a host name up before connecting, so its connect timeout bounds the TCP connect alone
///   and a slow resolver delays a request without failing it (``NameLookup/beforeConnect``).
public final class ResilientDriver: ClientDriver {
    public let name = "resilient (netsim reference client)"

    private let config: DriverConfig
    private let connector: ReferenceConnector
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

    init(config: DriverConfig) {
        self.config = config
        connector = ReferenceConnector(config: config, lookup: .beforeConnect)
        idleTimeout = config.duration("idle_timeout") ?? .seconds(30)
        backoff = config.duration("backoff") ?? .milliseconds(100)
        backoffCap = config.duration("backoff_cap") ?? .seconds(5)
        retryAfterCap = config.duration("retry_after_cap") ?? .seconds(10)
        random = NIOLockedValueBox(SeededRandom(seed: config.seed).derived(SeededRandom.label("resilient-backoff")))
    }

    public func ready(timeout: Duration) async throws {}

    public func shutdown() async { connector.closeAll() }

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
        let pool = connector.pool
        pool.expire(olderThan: idleTimeout)
        let method = request.method.uppercased()
        if method == "GET", let cached = cache.answer(request.url) {
            note("\(request.label) \(method) \(url.target): served from cache")
            return cached
        }
        let key = "\(url.host):\(url.port)"
        let idempotent = idempotentMethods.contains(method)
        let retries = max(0, config.retries ?? 1)
        var attempt = 0
        var serverPause: Duration?
        while true {
            if attempt > 0 {
                let pause = serverPause ?? delay(beforeRetry: attempt)
                serverPause = nil
                note("\(request.label) backing off \(pause.compactDescription) before retry \(attempt)")
                try? await Task.sleep(for: pause)
            }
            var link: ReferenceLink?
            var reused = false
            if attempt == 0 {
                while let pooled = pool.take(key) {
                    if await pooled.looksAlive() {
                        link = .http1(pooled)
                        reused = true
                        break
                    }
                    note("\(request.label) dropping dead pooled connection\(ReferenceLink.http1(pooled).onPort)")
                    pooled.close()
                }
            }
            if link == nil {
                do {
                    // The shared h2 connection only while it takes new streams (no GOAWAY).
                    (link, reused) = try await connector.link(to: url, key: key, reusable: { $0.takesNewStreams })
                } catch {
                    note("\(request.label) attempt \(attempt + 1): connect failed: \(error.message)")
                    if error.kind == .tls, let portal = await captivePortal(refusedCertificate: error, url: url, request: request) {
                        return ResponseBuilder.failure(.tls, portal)
                    }
                    // Refused, or reset as it was made: nothing was sent, so trying again is safe.
                    if attempt < retries, idempotent, error.kind == .refused || error.kind == .reset {
                        attempt += 1
                        continue
                    }
                    return ResponseBuilder.failure(error.kind, error.message)
                }
            }
            guard let link else { continue }
            let result = await link.exchange(method: method, url: url, headers: request.headers, body: request.body, timeout: config.timeout)
            switch result {
            case .success(let response):
                note("\(request.label) attempt \(attempt + 1): \(response.status)\(link.onPort)\(reused ? " (reused)" : "")")
                connector.release(link, key: key, after: response)
                if let portal = await captivePortal(response, url: url, request: request) {
                    return ResponseBuilder.failure(.other, portal, localPort: link.localPort)
                }
                if let wait = Self.retryAfter(response), idempotent, attempt < retries {
                    guard wait <= retryAfterCap else {
                        note("\(request.label) \(response.status) asks to retry after \(wait.compactDescription), beyond retry_after_cap: reporting it")
                        return ResponseBuilder.response(status: response.status, headers: response.headers, body: response.body, localPort: link.localPort)
                    }
                    note("\(request.label) \(response.status) with Retry-After: waiting \(wait.compactDescription) as asked")
                    serverPause = wait
                    attempt += 1
                    continue
                }
                if method == "GET", let lifetime = Self.cacheLifetime(response) {
                    cache.store(request.url, response, for: lifetime)
                }
                return ResponseBuilder.response(status: response.status, headers: response.headers, body: response.body, localPort: link.localPort)
            case .failure(let failure):
                note("\(request.label) attempt \(attempt + 1): \(failure.kind.rawValue)\(link.onPort)\(reused ? " (reused)" : ""): \(failure.message)")
                if attempt < retries, Self.retryable(failure, idempotent: idempotent) {
                    retire(link, after: failure, reused: reused, key: key)
                    attempt += 1
                    continue
                }
                retire(link, after: failure, reused: reused, key: key)
                return ResponseBuilder.failure(failure.kind, failure.message, localPort: link.localPort)
            }
        }
    }

    /// Whether a failed request may be sent again. An h2 stream refused with REFUSED_STREAM was
    /// not processed (RFC 9113 §8.7): any method may go again. Any other stream reset, and a
    /// connection that failed before any response, may have been processed: idempotent methods
    /// only, and for a connection only when it failed as a dead one does (reset, closed).
    static func retryable(_ failure: ExchangeFailure, idempotent: Bool) -> Bool {
        if let code = failure.streamReset { return code == .refusedStream || idempotent }
        let connectionLevel = failure.kind == .reset || failure.kind == .closedBeforeResponse
        return idempotent && connectionLevel && failure.beforeResponse
    }

    /// After a failure: a stream reset leaves its h2 connection shared (only the stream ended);
    /// any other failure closes the connection, and when it was a reused one, every other idle
    /// connection to the host goes too (they were opened before the same network change).
    private func retire(_ link: ReferenceLink, after failure: ExchangeFailure, reused: Bool, key: String) {
        guard failure.streamReset == nil else { return }
        if case .h2(let connection) = link { connector.h2.forget(connection, of: key) }
        link.close()
        if reused, failure.kind == .reset || failure.kind == .closedBeforeResponse { connector.pool.drain(key) }
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

    /// `captive portal: …` when a refused certificate was a portal's: it answers the probe.
    private func captivePortal(refusedCertificate failure: ExchangeFailure, url: PlainURL, request: DriverRequest) async -> String? {
        let (verdict, line) = await CaptivePortalCheck.confirm(
            "the server's certificate was refused", url: url, connectTimeout: config.connectTimeout, timeout: config.timeout)
        note("\(request.label) \(line)")
        return verdict.map { "\($0) (\(failure.message))" }
    }

    /// `captive portal: …` when the answer is a portal's (probing when it only looks like one).
    private func captivePortal(_ response: RawResponse, url: PlainURL, request: DriverRequest) async -> String? {
        if let failed = CaptivePortalCheck.failedProbe(response, url: url) {
            note("\(request.label) \(failed)")
            return failed
        }
        guard let suspicion = CaptivePortalCheck.suspicion(response, url: url, requestHeaders: request.headers) else { return nil }
        let (verdict, line) = await CaptivePortalCheck.confirm(
            suspicion, url: url, connectTimeout: config.connectTimeout, timeout: config.timeout)
        note("\(request.label) \(line)")
        return verdict
    }
}
