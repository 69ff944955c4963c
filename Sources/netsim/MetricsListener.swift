import Foundation
import NetsimCore
import NetsimRelay
import NetsimService

/// `netsim relay --metrics ADDR`: the relay's traffic as Prometheus metrics on `GET /metrics`,
/// the same families `netsim serve` exports, with `proxy="relay"`.
struct MetricsListener {
    /// Records the relay's events (a sink on its log) and its added delays (its ``DelayObserver``).
    let metrics: ProxyMetrics
    private let server: APIServer
    let address: Endpoint

    /// The `proxy` label of a plain relay's series.
    static let proxyLabel = "relay"

    /// Binds `address` (then warns loudly when other machines can reach it) and starts serving.
    static func start(at address: Endpoint, log: EventLog) async throws -> MetricsListener {
        let registry = MetricsRegistry()
        let metrics = ProxyMetrics(proxy: proxyLabel, registry: registry)
        log.addSink(metrics)
        let server = APIServer(api: MetricsEndpoint(registry: registry))
        do {
            let bound = try await server.start(host: address.host, port: address.port)
            if let warning = exposureWarning(bound) { warnLoudly(warning) }  // with the port that is open
            return MetricsListener(metrics: metrics, server: server, address: bound)
        } catch {
            await server.stop()
            throw RuntimeError("--metrics \(address): cannot listen: \(SocketFailureText.describe(error))")
        }
    }

    /// The warning for a metrics listener other machines can reach; nil on loopback.
    static func exposureWarning(_ address: Endpoint) -> String? {
        guard !address.isLoopback else { return nil }
        return """
            netsim relay serves metrics on \(address), which is NOT a loopback address: anyone who can \
            reach this machine on that port can read the relay's traffic counts.
            """
    }

    func stop() async { await server.stop() }
}
