import Foundation
import NetsimCore

/// Counts one proxy's traffic from its relays' event logs (attached as a sink, so nothing polls
/// the log and nothing is kept in memory). Survives disabling and enabling the proxy.
// `@unchecked Sendable`: counters are behind its lock (sinks are called from every event loop).
public final class ProxyMetrics: EventSink, @unchecked Sendable {
    private let lock = NSLock()
    private var bytesUp = 0
    private var bytesDown = 0
    private var opened = 0
    private var closed = 0
    private var faults: [String: Int] = [:]

    public init() {}

    public func receive(_ event: Event) {
        lock.withLock {
            switch event.kind {
            case .bytes(.up, let n): bytesUp += n
            case .bytes(.down, let n): bytesDown += n
            case .opened: opened += 1
            case .closed: closed += 1
            case .faultFired(let fault, _): faults[fault.rawValue, default: 0] += 1
            default: break
            }
        }
    }

    public func flush() {}

    public struct Snapshot: Sendable, Equatable {
        public var bytesUp: Int
        public var bytesDown: Int
        public var connectionsTotal: Int
        public var connectionsOpen: Int
        public var faults: [String: Int]
    }

    public var snapshot: Snapshot {
        lock.withLock {
            Snapshot(bytesUp: bytesUp, bytesDown: bytesDown, connectionsTotal: opened,
                     connectionsOpen: max(0, opened - closed), faults: faults)
        }
    }
}

/// Prometheus text exposition format (version 0.0.4), written by hand.
enum PrometheusText {
    static func render(_ proxies: [(name: String, metrics: ProxyMetrics.Snapshot)]) -> String {
        var out = ""
        func family(_ name: String, _ type: String, _ help: String, _ samples: [(labels: String, value: Int)]) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
            for sample in samples { out += "\(name){\(sample.labels)} \(sample.value)\n" }
        }
        let sorted = proxies.sorted { $0.name < $1.name }
        family("netsim_proxy_bytes_total", "counter", "Bytes delivered through the proxy after impairment, by Toxiproxy stream (upstream = client to server).",
               sorted.flatMap { p in
                   [(#"proxy="\#(escape(p.name))",stream="upstream""#, p.metrics.bytesUp),
                    (#"proxy="\#(escape(p.name))",stream="downstream""#, p.metrics.bytesDown)]
               })
        family("netsim_proxy_connections_open", "gauge", "Connections open through the proxy.",
               sorted.map { (#"proxy="\#(escape($0.name))""#, $0.metrics.connectionsOpen) })
        family("netsim_proxy_connections_total", "counter", "Connections accepted by the proxy.",
               sorted.map { (#"proxy="\#(escape($0.name))""#, $0.metrics.connectionsTotal) })
        family("netsim_proxy_faults_total", "counter", "Faults that acted on a connection or the listener, by kind.",
               sorted.flatMap { p in
                   p.metrics.faults.sorted { $0.key < $1.key }.map {
                       (#"proxy="\#(escape(p.name))",kind="\#(escape($0.key))""#, $0.value)
                   }
               })
        return out
    }

    static func escape(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\")
            .replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }
}
