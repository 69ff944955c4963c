import Foundation
import NetsimCore
import Testing
@testable import NetsimService

/// `netsim_proxy_faults_total` counts faults that acted, each once per connection: a fault
/// logs when it takes hold and again when it acts (a `limit` set up, then closing the
/// connection), and that was two.
@Suite("proxy metrics: faults")
struct ProxyMetricsTests {
    @Test func aFaultCountsOncePerConnectionItActedOn() {
        let registry = MetricsRegistry()
        let metrics = ProxyMetrics(proxy: "db", registry: registry)
        for raw in UInt64(1)...2 {
            let id = ConnectionID(raw)
            metrics.receive(Event(time: 0, connection: id, kind: .opened(client: nil)))
            metrics.receive(Event(time: 1, connection: id, kind: .faultFired(fault: "limit", detail: "the connection closes after 10 bytes")))
            metrics.receive(Event(time: 2, connection: id, kind: .faultFired(fault: "limit", detail: "closed after the bytes the fault allowed")))
            metrics.receive(Event(time: 3, connection: id, kind: .closed(by: .relay, how: .fin, upBytes: 10, downBytes: 0)))
        }
        let text = registry.exposition()
        #expect(text.contains(#"netsim_proxy_faults_total{proxy="db",kind="limit"} 2"#), "\(text)")
    }
}
