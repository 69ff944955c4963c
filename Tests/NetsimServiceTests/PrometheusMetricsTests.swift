import Foundation
import NetsimCore
import NetsimLoopback
import Testing
@testable import NetsimService

/// `/metrics` as Prometheus reads it: fetched over HTTP from `netsim serve` on a free port and
/// parsed by the PyPI package prometheus-client's own parser (Fixtures/clients/parse_metrics.py).
@Suite("/metrics through Prometheus's parser")
struct PrometheusMetricsTests {
    static let script = ToxiproxyPythonTests.packageRoot.appendingPathComponent("Fixtures/clients/parse_metrics.py")

    /// What the parser made of the page.
    struct Parsed: Decodable {
        struct Family: Decodable {
            var type: String
            var documentation: String
            var samples: [Sample]
        }
        /// `[name, labels, value]`, as the script prints it.
        struct Sample: Decodable {
            var name: String
            var labels: [String: String]
            var value: Double
            init(from decoder: any Decoder) throws {
                var list = try decoder.unkeyedContainer()
                name = try list.decode(String.self)
                labels = try list.decode([String: String].self)
                value = try list.decode(Double.self)
            }
        }
        var content_type: String
        var families: [String: Family]

        /// The value of the sample `name` whose labels include `labels`.
        func value(_ family: String, _ name: String, _ labels: [String: String]) -> Double? {
            families[family]?.samples.first { sample in
                sample.name == name && labels.allSatisfy { key, value in sample.labels[key] == value }
            }?.value
        }
    }

    static func parse(_ url: String) async throws -> Parsed {
        let result = try await WatchedProcess(ToxiproxyPythonTests.python, [script.path, url]).result(within: .seconds(30))
        #expect(result.status == 0, "prometheus-client's parser refused /metrics:\n\(result.standardError)")
        return try JSONDecoder().decode(Parsed.self, from: Data(result.standardOutput.utf8))
    }

    @Test("counters, gauge and both histograms parse, with the traffic, latency and lifetime of one connection")
    func parsesWithPrometheusClient() async throws {
        guard FileManager.default.isExecutableFile(atPath: ToxiproxyPythonTests.python.path) else {
            Issue.record("the virtualenv with prometheus-client is missing at \(ToxiproxyPythonTests.python.path): run ci/setup")
            return
        }
        let events = EventWaiter()
        let api = ToxiproxyAPI(threads: 1, eventSink: events)
        let server = APIServer(api: api)
        let echo = try LoopbackServer.echo()
        defer { echo.stop() }
        let bound = try await server.start(host: "127.0.0.1", port: 0)
        do {
            let created = await ToxiproxyAPITests.createProxy(api, echo)
            let listen = try Endpoint(parsing: ToxiproxyAPITests.proxy(created)?.listen ?? "")
            // 20 ms on the way back: every downstream chunk is held exactly that long.
            let toxic = await api.handle(APIRequest(method: "POST", uri: "/proxies/db/toxics", json: #"{"type":"latency","attributes":{"latency":20}}"#))
            #expect(toxic.status == 200, "\(toxic.text)")
            #expect(try await ToxiproxyAPITests.echo("hello", through: listen) == Array("hello".utf8))
            #expect(await events.count(1) { if case .closed = $0.kind { true } else { false } })

            let parsed = try await Self.parse("http://\(bound)/metrics")
            #expect(parsed.content_type.hasPrefix("text/plain; version=0.0.4"))
            let db = ["proxy": "db"]
            #expect(parsed.families["netsim_proxy_bytes"]?.type == "counter")
            #expect(parsed.families["netsim_proxy_bytes"]?.documentation.hasPrefix("Bytes delivered") == true)
            #expect(parsed.value("netsim_proxy_bytes", "netsim_proxy_bytes_total", ["proxy": "db", "stream": "upstream"]) == 5)
            #expect(parsed.value("netsim_proxy_bytes", "netsim_proxy_bytes_total", ["proxy": "db", "stream": "downstream"]) == 5)
            #expect(parsed.families["netsim_proxy_connections"]?.type == "counter")
            #expect(parsed.value("netsim_proxy_connections", "netsim_proxy_connections_total", db) == 1)
            #expect(parsed.families["netsim_proxy_connections_open"]?.type == "gauge")
            #expect(parsed.value("netsim_proxy_connections_open", "netsim_proxy_connections_open", db) == 0)

            let latency = "netsim_proxy_added_latency_seconds"
            let down = ["proxy": "db", "stream": "downstream"]
            #expect(parsed.families[latency]?.type == "histogram")
            let chunks = parsed.value(latency, latency + "_count", down) ?? 0
            #expect(chunks >= 1, "the echoed bytes were held back")
            #expect(parsed.value(latency, latency + "_bucket", down.merging(["le": "0.01"]) { a, _ in a }) == 0, "none under 10 ms")
            #expect(parsed.value(latency, latency + "_bucket", down.merging(["le": "0.025"]) { a, _ in a }) == chunks, "all at 20 ms")
            let sum = parsed.value(latency, latency + "_sum", down) ?? 0
            #expect(abs(sum - 0.02 * chunks) < 0.000_001, "each chunk exactly 20 ms: \(sum) for \(chunks)")
            #expect(parsed.value(latency, latency + "_count", ["proxy": "db", "stream": "upstream"]) == 0, "nothing held back upstream")

            let lifetime = "netsim_proxy_connection_duration_seconds"
            #expect(parsed.families[lifetime]?.type == "histogram")
            #expect(parsed.value(lifetime, lifetime + "_count", db) == 1)
            #expect((parsed.value(lifetime, lifetime + "_sum", db) ?? 0) >= 0.02, "it lived at least the 20 ms its echo took")

            // A deleted proxy's series go with it.
            #expect(await api.handle(APIRequest(method: "DELETE", uri: "/proxies/db")).status == 204)
            let after = await api.handle(APIRequest(method: "GET", uri: "/metrics")).text
            #expect(!after.contains(#"proxy="db""#), "\(after)")
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test("two APIs in one process keep their own counts (no global metrics system)")
    func registriesAreSeparate() async throws {
        try await ToxiproxyAPITests.withAPI { first, echo in
            try await ToxiproxyAPITests.withAPI { second, _ in
                _ = await ToxiproxyAPITests.createProxy(first, echo, name: "one")
                _ = await ToxiproxyAPITests.createProxy(second, echo, name: "two")
                let a = await first.handle(APIRequest(method: "GET", uri: "/metrics")).text
                let b = await second.handle(APIRequest(method: "GET", uri: "/metrics")).text
                #expect(a.contains(#"netsim_proxy_connections_total{proxy="one"} 0"#), "\(a)")
                #expect(!a.contains(#"proxy="two""#), "\(a)")
                #expect(b.contains(#"netsim_proxy_connections_total{proxy="two"} 0"#), "\(b)")
                #expect(!b.contains(#"proxy="one""#), "\(b)")
            }
        }
    }
}
