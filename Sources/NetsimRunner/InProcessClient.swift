import Foundation
import AsyncHTTPClient
import NetsimHTTP
import NetsimScenario

/// A client that runs in the caller's own process — a Swift package's own networking code in
/// its own `swift test` (the `NetsimTesting` library) — made for each run from the scenario's
/// `client:` settings, as a built-in driver is. With one in ``RunOptions/inProcess`` (and no
/// `driver` named) a run drives it instead of the scenario's client.
public struct InProcessClient: Sendable {
    /// The name reports and the matrix show.
    public var name: String
    /// Makes the client for one run (one connection pool per run, as every driver has).
    public var make: @Sendable (DriverConfig) async throws -> any ClientDriver

    public init(name: String, make: @escaping @Sendable (DriverConfig) async throws -> any ClientDriver) {
        self.name = name
        self.make = make
    }
}

/// A failure a client classifies itself: what an in-process client throws when it knows the
/// kind better than its error type says (docs/drivers.md, "error kinds").
public struct ClientFailure: Error, Sendable, CustomStringConvertible {
    public var kind: ErrorKind
    public var message: String

    public init(_ kind: ErrorKind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "\(kind.rawValue): \(message)" }
}

/// The error kinds of what Swift clients throw, by the rules the built-in drivers follow:
/// ``ClientFailure`` as it says; `URLError` (FoundationNetworking) by code; AsyncHTTPClient's
/// `HTTPClientError`; SwiftNIO's `IOError`, connect and channel errors; `POSIXError` by errno;
/// anything else that mentions TLS/SSL is `tls`, the rest `other`.
public enum ClientErrorKind {
    public static func of(_ error: any Error) -> ErrorKind {
        if let failure = error as? ClientFailure { return failure.kind }
        if error is HTTPClientError { return AsyncHTTPClientDriver.kind(of: error) }
        if let posix = error as? POSIXError { return NIOErrorKind.kind(errno: posix.code.rawValue) }
        if let kind = NIOErrorKind.kind(of: error) { return kind }
        let ns = error as NSError
        if ns.domain == NSURLErrorDomain { return URLSessionDriver.kind(of: ns) }
        let text = String(reflecting: error).lowercased()
        return text.contains("ssl") || text.contains("tls") ? .tls : .other
    }
}

extension DriverResponse {
    /// A complete response as the judge reads it: headers normalized (names lower-cased,
    /// repeats joined), the body's SHA-256, length and text.
    public static func completed(status: Int, headers: [HTTPHeader], body: [UInt8], localPort: Int? = nil) -> DriverResponse {
        ResponseBuilder.response(status: status, headers: headers, body: body, localPort: localPort)
    }

    /// A failed request: the kind (``ClientErrorKind/of(_:)`` finds it for a thrown error) and the
    /// library's own text.
    public static func failed(_ kind: ErrorKind, _ message: String, localPort: Int? = nil) -> DriverResponse {
        ResponseBuilder.failure(kind, message, localPort: localPort)
    }
}
