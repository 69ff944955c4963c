import CoreMetrics
import Prometheus

/// One server's metrics: a swift-prometheus registry, and the swift-metrics factory that records
/// into it. Each `netsim serve` API and each `netsim relay --metrics` has its own, passed
/// explicitly to what records: nothing calls `MetricsSystem.bootstrap` (once per process, and
/// tests run many servers in one process), so no two servers ever share or fight over counters.
public final class MetricsRegistry: Sendable {
    public let registry: PrometheusCollectorRegistry
    /// Hands out swift-metrics handlers (`Counter(label:dimensions:factory:)`) backed by `registry`.
    public let factory: PrometheusMetricsFactory

    public init() {
        registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets = [
            MetricNames.addedLatency: MetricNames.latencyBuckets,
            MetricNames.connectionDuration: MetricNames.connectionBuckets,
        ]
        self.factory = factory
    }

    /// The Prometheus text exposition (format 0.0.4) of everything recorded, with a `# HELP`
    /// line for each of netsim's families (swift-metrics handlers carry no help text).
    public func exposition() -> String {
        let text = registry.emitToString()
        guard !text.isEmpty else { return "" }  // no series yet (no proxy): an empty page
        var out = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("# TYPE "), let name = line.split(separator: " ").dropFirst(2).first,
               let help = MetricNames.help[String(name)] {
                out += "# HELP \(name) \(help)\n"
            }
            out += line
            out += "\n"
        }
        // `split` leaves an empty last piece after the final newline: don't double it.
        return out.hasSuffix("\n\n") ? String(out.dropLast()) : out
    }

    /// The content type Prometheus expects for the text format.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"
}

/// The metric names netsim exports (docs/service.md lists them), and their help text.
public enum MetricNames {
    public static let bytes = "netsim_proxy_bytes_total"
    public static let connectionsOpen = "netsim_proxy_connections_open"
    public static let connectionsTotal = "netsim_proxy_connections_total"
    public static let faults = "netsim_proxy_faults_total"
    public static let addedLatency = "netsim_proxy_added_latency_seconds"
    public static let connectionDuration = "netsim_proxy_connection_duration_seconds"

    static let help: [String: String] = [
        bytes: "Bytes delivered through the proxy after impairment, by Toxiproxy stream (upstream = client to server).",
        connectionsOpen: "Connections open through the proxy.",
        connectionsTotal: "Connections accepted by the proxy.",
        faults: "Faults that acted on a connection or the listener, by kind.",
        addedLatency: "Delay the link model added to each chunk it held back (latency, jitter, rate, loss recovery), by stream.",
        connectionDuration: "How long connections through the proxy lived, from accept to both legs closed.",
    ]

    /// From a LAN's 1 ms to a satellite hop's seconds of queueing.
    static let latencyBuckets: [Duration] = [
        .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500),
        .seconds(5), .seconds(10),
    ]
    /// From a refused request to a long-polling or streaming connection.
    static let connectionBuckets: [Duration] = [
        .milliseconds(10), .milliseconds(100), .seconds(1), .seconds(5), .seconds(15), .seconds(60),
        .seconds(300), .seconds(1800), .seconds(3600),
    ]
}
