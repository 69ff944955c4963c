/// How the reference clients reach an origin: an idle pooled HTTP/1.1 connection, the origin's
/// shared h2 connection, or a new connection — over TLS offering h2 and HTTP/1.1 by ALPN, in
/// plaintext HTTP/1.1. The two drivers differ in what they accept from the pools, not here.
struct ReferenceConnector: Sendable {
    let pool: ConnectionPool
    let h2: H2ConnectionPool
    let tls: LazyTLSContext
    let connectTimeout: Duration?
    let lookup: NameLookup

    init(config: DriverConfig, lookup: NameLookup) {
        self.lookup = lookup
        pool = ConnectionPool(maxIdle: config.pool ?? 10)
        h2 = H2ConnectionPool()
        tls = LazyTLSContext(caFile: config.caFile)
        connectTimeout = config.connectTimeout ?? config.timeout
    }

    /// The origin's shared h2 connection when `reusable` takes it (`reused` true), else a new
    /// connection. Idle HTTP/1.1 connections are the caller's to take from ``pool`` first.
    func link(to url: PlainURL, key: String, reusable: (ReferenceH2Connection) -> Bool) async throws(ExchangeFailure) -> (link: ReferenceLink, reused: Bool) {
        guard url.secure else {
            return (.http1(try await ReferenceConnection.connect(to: url, connectTimeout: connectTimeout, lookup: lookup)), false)
        }
        let (tls, connectTimeout, lookup) = (self.tls, self.connectTimeout, self.lookup)
        return try await h2.link(for: key, reusable: reusable) { () async throws(ExchangeFailure) -> ReferenceLink in
            try await ReferenceH2Connection.connect(to: url, tls: try tls.get(), connectTimeout: connectTimeout, lookup: lookup)
        }
    }

    /// After a successful exchange: an HTTP/1.1 connection goes back to the pool (or is closed
    /// when the server said `Connection: close`); an h2 connection stays shared.
    func release(_ link: ReferenceLink, key: String, after response: RawResponse) {
        guard case .http1(let connection) = link else { return }
        if response.header("Connection")?.lowercased() == "close" { connection.close() } else { pool.put(key, connection) }
    }

    func closeAll() {
        pool.closeAll()
        h2.closeAll()
    }
}
