import Foundation

/// Your own HTTP client, driven in-process by a netsim run: given a request, perform it with
/// your client and return what it got, or throw what it threw.
///
/// Make one per run (``Netsim/run(scenario:seed:pcap:client:)`` asks for a factory): a run is
/// about your client's connection pool, so it starts empty and lives for the whole run.
/// `perform` is called concurrently when a scenario sends requests in parallel.
///
/// Errors are classified into the scenario format's kinds (`refused`, `reset`,
/// `closed-before-response`, `timeout`, `tls`, `dns`, `other`) from `URLError`,
/// AsyncHTTPClient's and SwiftNIO's errors and `POSIXError`; throw a ``ClientFailure`` to say
/// the kind yourself.
public protocol NetsimClient: Sendable {
    /// Performs `request` with your client. Send every header given — `X-Netsim-Request` ties
    /// the request to the connection the relay saw it on.
    func perform(_ request: NetsimRequest) async throws -> NetsimResponse
    /// Ends the client (closes its pool) at the end of the run.
    func shutdown() async
}

extension NetsimClient {
    public func shutdown() async {}
}

/// A request a scenario sends, through the relay.
public struct NetsimRequest: Sendable {
    /// The request's number in the run (1, 2, …).
    public var id: Int
    public var method: String
    /// `http://127.0.0.1:PORT/path` (the relay), or `https://…` in a TLS scenario.
    public var url: URL
    /// Send them all: they include the scenario's headers and the request tag.
    public var headers: [HTTPHeader]
    public var body: [UInt8]?

    public init(id: Int, method: String, url: URL, headers: [HTTPHeader], body: [UInt8]?) {
        self.id = id
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    /// The request's tag, `NAME#N` (`after-unlock#2`): which scenario request this is.
    public var tag: String? {
        headers.first { $0.name.caseInsensitiveCompare(RequestTag.header) == .orderedSame }?.value
    }
}

/// What your client got.
public struct NetsimResponse: Sendable {
    public var status: Int
    public var headers: [HTTPHeader]
    public var body: [UInt8]
    /// The client-side TCP port of the connection that carried it, when your client can tell
    /// (checks such as `connection: new` use the relay's view of the request tag otherwise).
    public var localPort: Int?

    public init(status: Int, headers: [HTTPHeader] = [], body: [UInt8] = [], localPort: Int? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.localPort = localPort
    }

    public init(status: Int, headers: [HTTPHeader] = [], body: String, localPort: Int? = nil) {
        self.init(status: status, headers: headers, body: Array(body.utf8), localPort: localPort)
    }
}

/// A client written as a closure: `ClosureClient { request in … }`.
public struct ClosureClient: NetsimClient {
    private let body: @Sendable (NetsimRequest) async throws -> NetsimResponse
    private let end: @Sendable () async -> Void

    public init(
        perform: @escaping @Sendable (NetsimRequest) async throws -> NetsimResponse,
        shutdown: @escaping @Sendable () async -> Void = {}
    ) {
        body = perform
        end = shutdown
    }

    public func perform(_ request: NetsimRequest) async throws -> NetsimResponse { try await body(request) }
    public func shutdown() async { await end() }
}
