import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NetsimCore
import NetsimHTTP
import NetsimScenario

/// `urlsession`: Foundation's URLSession (on Linux FoundationNetworking, libcurl underneath).
/// One session per run, so libcurl's connection pool persists across requests
/// (docs/drivers.md, "urlsession").
///
/// - `timeout` → `timeoutIntervalForRequest` and `timeoutIntervalForResource`;
///   `connect_timeout` has no URLSession knob and is ignored (logged);
/// - `pool` → `httpMaximumConnectionsPerHost`;
/// - `settings.cache`: `protocol` (default: `.useProtocolCachePolicy` with a memory URLCache)
///   or `off` (`.reloadIgnoringLocalCacheData`, no URLCache);
/// - `retries` is ignored: URLSession has no retry setting (logged when set);
/// - `localPort` is always nil: libcurl knows it (CURLINFO_LOCAL_PORT) but URLSession does not
///   pass it on, so `connection:` expectations cannot be judged for this driver.
public final class URLSessionDriver: ClientDriver {
    public let name = "urlsession (FoundationNetworking)"
    private let session: URLSession
    private let cachePolicy: URLRequest.CachePolicy
    private let notes = ClientLog()

    /// Said after a TLS failure when the run's CA is one URLSession cannot trust: a verdict of
    /// `tls` is then the harness's doing, and the report says how to change that.
    private let untrustedCAHint: String?

    /// - Parameter runCA: the CA a TLS run's upstream uses. URLSession on Linux cannot be given
    ///   it (docs/tls.md); only the system store counts.
    public convenience init(client: ClientSpec, seed: UInt64 = 0, runCA: String? = nil) {
        self.init(config: DriverConfig(client, seed: seed, caFile: runCA))
    }

    init(config: DriverConfig) {
        let configuration = URLSessionConfiguration.default
        if let timeout = config.timeout {
            configuration.timeoutIntervalForRequest = timeout.seconds
            configuration.timeoutIntervalForResource = timeout.seconds
        }
        if let pool = config.pool { configuration.httpMaximumConnectionsPerHost = pool }
        var notes: [String] = []
        switch config.settings["cache"]?.lowercased() ?? "protocol" {
        case "off", "none", "false":
            cachePolicy = .reloadIgnoringLocalCacheData
            configuration.urlCache = nil
        default:
            cachePolicy = .useProtocolCachePolicy
            configuration.urlCache = URLCache(memoryCapacity: 4 << 20, diskCapacity: 0, diskPath: nil)
        }
        configuration.requestCachePolicy = cachePolicy
        if config.connectTimeout != nil { notes.append("connect_timeout ignored: URLSession has no connect timeout") }
        if let retries = config.retries, retries > 0 { notes.append("retries: \(retries) ignored: URLSession does not retry on its own") }
        for key in config.settings.keys.sorted() where key != "cache" { notes.append("unknown setting ignored: \(key)") }
        session = URLSession(configuration: configuration)
        untrustedCAHint = config.caFile.flatMap { Self.systemStoreTrusts($0) ? nil : " (URLSession on Linux trusts only the system's CA store, and netsim's CA is not in it: see docs/tls.md, 'Installing (and removing) the CA')" }
        for note in notes { self.notes.note(note) }
    }

    /// Whether the system bundle libcurl reads holds the certificate in `caFile`.
    static func systemStoreTrusts(_ caFile: String) -> Bool {
        guard let pem = try? String(contentsOfFile: caFile, encoding: .utf8),
              let bundle = try? String(contentsOfFile: "/etc/ssl/certs/ca-certificates.crt", encoding: .utf8) else { return false }
        let body = pem.split(whereSeparator: \.isNewline).filter { !$0.hasPrefix("-----") }.joined()
        return !body.isEmpty && bundle.split(whereSeparator: \.isNewline).joined().contains(body)
    }

    public func ready(timeout: Duration) async throws {}

    public func shutdown() async { session.invalidateAndCancel() }

    public var log: String { get async { notes.contents } }

    public func perform(_ request: DriverRequest) async throws -> DriverResponse {
        guard let url = URL(string: request.url) else {
            return ResponseBuilder.failure(.other, "urlsession: not a URL: \(request.url)")
        }
        var urlRequest = URLRequest(url: url, cachePolicy: cachePolicy)
        urlRequest.httpMethod = request.method
        for header in request.headers { urlRequest.addValue(header.value, forHTTPHeaderField: header.name) }
        if let body = request.body { urlRequest.httpBody = Data(body.utf8) }
        do {
            let (data, response) = try await session.data(for: urlRequest)
            guard let http = response as? HTTPURLResponse else {
                return ResponseBuilder.failure(.other, "urlsession: not an HTTP response")
            }
            let headers = http.allHeaderFields.compactMap { key, value -> HTTPHeader? in
                guard let name = key as? String else { return nil }
                return HTTPHeader(name, "\(value)")
            }.sorted { ($0.name.lowercased(), $0.name) < ($1.name.lowercased(), $1.name) }  // a stable order for X-A and x-a
            return ResponseBuilder.response(status: http.statusCode, headers: headers, body: [UInt8](data), localPort: nil)
        } catch {
            let nsError = error as NSError
            var message = "\(nsError.domain) \(nsError.code): \(nsError.localizedDescription)"
            let kind = Self.kind(of: nsError)
            if kind == .tls, let untrustedCAHint { message += untrustedCAHint }
            notes.note("\(request.label) \(request.method) \(url.path): \(message)")
            return ResponseBuilder.failure(kind, message)
        }
    }

    /// URLError codes as FoundationNetworking reports libcurl's failures.
    static func kind(of error: NSError) -> ErrorKind {
        guard error.domain == NSURLErrorDomain else { return .other }
        switch error.code {
        case NSURLErrorCannotConnectToHost: return .refused  // −1004
        case NSURLErrorNetworkConnectionLost: return .reset  // −1005
        case NSURLErrorBadServerResponse, NSURLErrorZeroByteResource: return .closedBeforeResponse  // −1011 (libcurl: empty reply), −1014
        case NSURLErrorTimedOut: return .timeout  // −1001
        case NSURLErrorCannotFindHost, NSURLErrorDNSLookupFailed: return .dns  // −1003, −1006
        case NSURLErrorSecureConnectionFailed, NSURLErrorServerCertificateUntrusted, NSURLErrorServerCertificateHasBadDate,
             NSURLErrorServerCertificateNotYetValid, NSURLErrorServerCertificateHasUnknownRoot, NSURLErrorClientCertificateRejected:
            return .tls
        default:
            // FoundationNetworking reports libcurl's certificate failures (CURLE_PEER_FAILED_VERIFICATION)
            // as −1 with libcurl's text: "SSL certificate problem: …".
            let text = error.localizedDescription.lowercased()
            // An RST in answer to the ClientHello (a portal's tls=reset) comes as −1 with
            // libcurl's "Recv failure: Connection reset by peer": a reset, as other clients say.
            if text.contains("connection reset by peer") || text.contains("broken pipe") { return .reset }
            return text.contains("ssl") || text.contains("certificate") ? .tls : .other
        }
    }
}
