import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NetsimCore
import NetsimLoopback
import Testing
@testable import NetsimService

/// The proof of compatibility: the PyPI package toxiproxy-python, which nobody here wrote, drives
/// `netsim serve` (over HTTP, on a free port) through Fixtures/clients/toxiproxy_scenario.py.
@Suite("toxiproxy-python against netsim serve")
struct ToxiproxyPythonTests {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let python = packageRoot.appendingPathComponent(".build/venv-toxiproxy/bin/python")
    static let script = packageRoot.appendingPathComponent("Fixtures/clients/toxiproxy_scenario.py")

    @Test("create, add and remove toxics, disable, enable, reset: traffic shows each effect")
    func scenario() async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.python.path) else {
            Issue.record("the toxiproxy-python virtualenv is missing at \(Self.python.path): run ci/setup")
            return
        }
        let server = APIServer(api: ToxiproxyAPI(threads: 1))
        let bound = try await server.start(host: "127.0.0.1", port: 0)
        let result: WatchedProcess.Result
        do {
            result = try await WatchedProcess(Self.python, [Self.script.path, String(bound.port)]).result(within: .seconds(60))
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
        let text = result.standardOutput + result.standardError
        #expect(result.status == 0, "toxiproxy-python scenario failed:\n\(text)")
        #expect(result.standardOutput.contains("OK: toxiproxy-python scenario passed"), "\(text)")
    }

    @Test("over HTTP: browsers get 403, /metrics is Prometheus text")
    func httpScreeningAndMetrics() async throws {
        let api = ToxiproxyAPI(threads: 1)
        let server = APIServer(api: api)
        let bound = try await server.start(host: "127.0.0.1", port: 0)
        // A family appears with its first series: one proxy (its upstream is never dialled).
        _ = await api.handle(APIRequest(method: "POST", uri: "/proxies", json: #"{"name":"db","listen":"127.0.0.1:0","upstream":"127.0.0.1:9"}"#))
        func get(_ path: String, headers: [String: String] = [:]) async throws -> (Int, String) {
            var request = URLRequest(url: URL(string: "http://\(bound)\(path)")!)
            for (k, v) in headers { request.setValue(v, forHTTPHeaderField: k) }
            let (data, response) = try await URLSession.shared.data(for: request)
            return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
        }
        let (browser, body) = (try? await get("/version", headers: ["User-Agent": "Mozilla/5.0"])) ?? (0, "")
        let (status, metrics) = (try? await get("/metrics")) ?? (0, "")
        await server.stop()
        #expect(browser == 403)
        #expect(body.contains(#""status":403"#))
        #expect(status == 200)
        #expect(metrics.contains("# TYPE netsim_proxy_bytes_total counter"))
    }
}
