import Crypto
import Foundation
import NIOCore
import NIOHTTP2
import NIOSSL
import NIOPosix
import NetsimCore
import NetsimHTTP
import NetsimScenario

/// What every in-process driver needs from the scenario's `client:` block (the same rules as
/// the exec protocol's `config`, docs/drivers.md): a driver maps what its library has and
/// ignores, with a note in its log, what it has not.
public struct DriverConfig: Sendable {
    /// The whole request's deadline (nil: the library's default).
    public var timeout: Duration?
    /// How long a connect may take (nil: `timeout`, else the library's default).
    public var connectTimeout: Duration?
    /// Most connections per origin (nil: the library's default).
    public var pool: Int?
    /// Retries of a failed request (nil: the library's default; 0: none).
    public var retries: Int?
    /// The scenario's `client: { settings: … }`, for what only one client understands.
    public var settings: [String: String]
    /// The run's seed (for drivers that draw random numbers, e.g. backoff jitter).
    public var seed: UInt64
    /// The CA to trust for `https://` (a TLS run's); nil: the system's trust store.
    public var caFile: String?

    public init(_ client: ClientSpec, seed: UInt64, caFile: String? = nil) {
        self.caFile = caFile
        timeout = client.timeout
        connectTimeout = client.connectTimeout
        pool = client.pool
        retries = client.retries
        settings = client.settings
        self.seed = seed
    }

    /// `settings[key]` as a duration (`30s`, `250ms`), or nil when absent or malformed.
    public func duration(_ key: String) -> Duration? {
        settings[key].flatMap { try? Duration(parsing: $0) }
    }
}

/// Builds the normalized answer from a complete response.
enum ResponseBuilder {
    static func response(status: Int, headers: [HTTPHeader], body: [UInt8], localPort: Int?, fromClientCache: Bool = false) -> DriverResponse {
        DriverResponse(
            status: status,
            headers: normalized(headers),
            bodySHA256: sha256(body),
            bodyLength: body.count,
            body: String(decoding: body.prefix(DriverResponse.textLimit), as: UTF8.self),
            localPort: localPort, fromClientCache: fromClientCache)
    }

    static func failure(_ kind: ErrorKind, _ message: String, localPort: Int? = nil) -> DriverResponse {
        DriverResponse(error: kind, errorMessage: message, localPort: localPort)
    }

    static func sha256(_ bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }

    /// Names lower-cased; repeated headers joined with `, ` (docs/drivers.md).
    static func normalized(_ headers: [HTTPHeader]) -> [HTTPHeader] {
        var order: [String] = []
        var values: [String: [String]] = [:]
        for header in headers {
            let name = header.name.lowercased()
            if values[name] == nil { order.append(name) }
            values[name, default: []].append(header.value)
        }
        return order.map { HTTPHeader($0, values[$0]!.joined(separator: ", ")) }
    }
}

/// Maps SwiftNIO errors (what AsyncHTTPClient and the reference clients surface) onto kinds.
enum NIOErrorKind {
    static func kind(of error: any Error) -> ErrorKind? {
        if let io = error as? IOError { return kind(errno: io.errnoCode) }
        if error is NameLookupFailure { return .dns }
        if let connection = error as? NIOConnectionError {
            // Every address failed: the first failure decides.
            if let first = connection.connectionErrors.first { return kind(of: first.error) }
            if connection.dnsAAAAError != nil || connection.dnsAError != nil { return .dns }
            return .other
        }
        if let channel = error as? ChannelError {
            switch channel {
            case .connectTimeout: return .timeout
            case .ioOnClosedChannel, .alreadyClosed, .outputClosed, .eof: return .reset
            default: return nil
            }
        }
        if error is NIOConnectionError { return .other }
        if error is NIOSSLError || error is BoringSSLError { return .tls }
        // h2: the server reset the request's stream (RST_STREAM); the connection may live on.
        if error is NIOHTTP2Errors.StreamClosed { return .reset }
        return nil
    }

    static func kind(errno code: Int32) -> ErrorKind {
        switch code {
        case ECONNREFUSED: .refused
        case ECONNRESET, EPIPE, ECONNABORTED: .reset
        case ETIMEDOUT: .timeout
        default: .other
        }
    }
}

/// Splits `http(s)://host:port/path?query` into what a raw HTTP/1.1 client needs.
struct PlainURL: Sendable {
    var host: String
    var port: Int
    var target: String
    /// `https`: TLS first.
    var secure: Bool

    init?(_ text: String) {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(), ["http", "https"].contains(scheme),
              let host = components.host, !host.isEmpty else { return nil }
        self.host = host
        secure = scheme == "https"
        port = components.port ?? (secure ? 443 : 80)
        var target = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { target += "?" + query }
        self.target = target
    }

    var authority: String { port == (secure ? 443 : 80) ? host : "\(host):\(port)" }
}

/// Methods a client may repeat without changing the outcome (RFC 9110 §9.2.2).
let idempotentMethods: Set<String> = ["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"]
