import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NetsimCore
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
        let process = Process()
        process.executableURL = Self.python
        process.arguments = [Self.script.path, String(bound.port)]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        // Read everything off the pipe while the script runs (bounded by a 60 s watchdog).
        let watchdog = Task {
            try await Task.sleep(for: .seconds(60))
            if process.isRunning { process.terminate() }
        }
        let text = await Task.detached { String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) }.value
        process.waitUntilExit()
        watchdog.cancel()
        await server.stop()
        #expect(process.terminationStatus == 0, "toxiproxy-python scenario failed:\n\(text)")
        #expect(text.contains("OK: toxiproxy-python scenario passed"), "\(text)")
    }

    @Test("over HTTP: browsers get 403, /metrics is Prometheus text")
    func httpScreeningAndMetrics() async throws {
        let server = APIServer(api: ToxiproxyAPI(threads: 1))
        let bound = try await server.start(host: "127.0.0.1", port: 0)
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
