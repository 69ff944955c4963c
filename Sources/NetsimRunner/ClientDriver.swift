import NetsimCore
import NetsimHTTP
import NetsimScenario

/// Drives one client under test through a scenario run.
///
/// A driver is made once per run, so the client's connection pool persists across requests —
/// the lock-screen incident is about exactly that pool. `perform` may be called concurrently
/// (parallel requests).
public protocol ClientDriver: Sendable {
    /// A short name for reports ("exec: urllib3 2.7.0").
    var name: String { get }
    /// Performs one request against `url` and returns what the client saw; never throws for a
    /// failure of the request itself (that is an outcome), only when the driver cannot work.
    func perform(_ request: DriverRequest) async throws -> DriverResponse
    /// Returns once the client can take requests (scenario time starts then), or throws.
    func ready(timeout: Duration) async throws
    /// Ends the client (closes its pool, ends its process).
    func shutdown() async
    /// Anything the client logged, for failure reports.
    var log: String { get async }
    /// After ``shutdown()``: how the client's process ended when that was not as the exec
    /// protocol asks (exit status 0 once stdin closed), e.g. `exit 3`; nil for a clean end and
    /// for clients that are no process of their own.
    var endProblem: String? { get async }
}

extension ClientDriver {
    public var endProblem: String? { get async { nil } }
}

/// A request as the driver receives it.
public struct DriverRequest: Sendable {
    public var id: Int
    public var method: String
    /// Absolute URL through the relay: `http://127.0.0.1:PORT/path`.
    public var url: String
    public var headers: [HTTPHeader]
    public var body: String?
    /// How the run's report names the request (`feed #3`), for a driver's own log lines, so
    /// they can be matched with the report; `#ID` when the request is not a scenario's.
    public var label: String

    public init(id: Int, method: String, url: String, headers: [HTTPHeader], body: String?, label: String? = nil) {
        self.id = id
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.label = label ?? "#\(id)"
    }
}

/// What the client saw.
public struct DriverResponse: Sendable, Equatable {
    public var status: Int?
    public var headers: [HTTPHeader]
    /// Lower-case hex SHA-256 of the whole body.
    public var bodySHA256: String?
    public var bodyLength: Int?
    /// The body as text (at most ``textLimit`` bytes of it), for `body: { contains: … }`.
    public var body: String?
    public var error: ErrorKind?
    /// The client library's own error text.
    public var errorMessage: String?
    /// The client-side TCP port of the connection that carried the final attempt, when known.
    public var localPort: Int?
    /// The client answered the request from its own cache: nothing went on the network, so the
    /// relay and the server saw no request (the outage-cache incident's symptom). Known for
    /// netsim's reference clients; other drivers leave it false.
    public var fromClientCache: Bool

    /// How much of a body drivers report as text: its first 64 KiB.
    public static let textLimit = 65536

    /// The body's text is only its start (``textLimit``): a text not found in it may be further on.
    public var bodyTextIsPartial: Bool { (bodyLength ?? 0) > Self.textLimit }

    public init(
        status: Int? = nil, headers: [HTTPHeader] = [], bodySHA256: String? = nil, bodyLength: Int? = nil,
        body: String? = nil, error: ErrorKind? = nil, errorMessage: String? = nil, localPort: Int? = nil,
        fromClientCache: Bool = false
    ) {
        self.status = status
        self.headers = headers
        self.bodySHA256 = bodySHA256
        self.bodyLength = bodyLength
        self.body = body
        self.error = error
        self.errorMessage = errorMessage
        self.localPort = localPort
        self.fromClientCache = fromClientCache
    }
}
