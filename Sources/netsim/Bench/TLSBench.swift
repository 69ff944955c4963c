import Foundation
import NetsimCore
import NetsimHTTP
import NetsimLoopback
import NetsimRelay
import NetsimTLS

/// Part `tls`: what TLS interception costs, measured with curl (its own timers: libcurl over
/// OpenSSL, the client most of the world's tools use) against the built-in TLS upstream —
/// direct, through a relay passing TLS through, and through an intercepting relay.
enum TLSBench {
    /// A difference in seconds as signed microseconds: a path can measure faster than direct
    /// when the machine is busy, and then says so.
    static func signedMicros(_ seconds: Double) -> String {
        (seconds < 0 ? "−" : "+") + Format.micros(abs(seconds) * 1e9)
    }

    enum Path: String, CaseIterable {
        case direct, passthrough = "relay, TLS passed through", intercept = "relay, TLS intercepted"
    }

    static func run(_ settings: BenchSettings) async throws -> BenchSection {
        let authority = try CertificateAuthority.ephemeral()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-bench-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let caFile = folder.appendingPathComponent("ca.pem").path
        try (try authority.pem).write(toFile: caFile, atomically: true, encoding: .utf8)
        let bulk = settings.quick ? 64 << 20 : 512 << 20
        let server = BuiltinServer(routes: [HTTPRoute(path: "/small", body: .text("ok")), HTTPRoute(path: "/bulk", body: .generated(bytes: bulk))],
                                   transport: try .tls(authority: authority, protocols: [.http2, .http1]))
        let upstream = try await server.start()
        let passthrough = Relay(configuration: RelayConfiguration(upstream: upstream), eventLog: EventLog(retention: 0))
        let intercepting = Relay(
            configuration: RelayConfiguration(upstream: upstream, tls: try TLSInterception(authority: authority, upstreamTrust: .authority(authority))),
            eventLog: EventLog(retention: 0))
        var ports: [Path: Int] = [.direct: upstream.port]
        do {
            ports[.passthrough] = try await passthrough.start().port
            ports[.intercept] = try await intercepting.start().port
        } catch {
            await passthrough.stop()
            await intercepting.stop()
            await server.stop()
            throw error
        }
        let curl = Curl(caFile: caFile)
        let handshakes = settings.quick ? 10 : 40
        let requests = settings.quick ? 100 : 400
        var section = BenchSection()
        let measured = await Result { () -> BenchSection in
            var rows = BenchSection()
            var handshake: [Path: Double] = [:]
            var roundTrip: [Path: Double] = [:]
            for path in Path.allCases {
                let base = "https://localhost:\(ports[path]!)"
                handshake[path] = median(try await curl.times(Array(repeating: "\(base)/small", count: handshakes), fresh: true).map(\.handshake))
                roundTrip[path] = median(try await curl.times(Array(repeating: "\(base)/small", count: requests), fresh: false).dropFirst().map(\.request))
            }
            for path in Path.allCases {
                let added = path == .direct ? "" : " (\(Self.signedMicros(handshake[path]! - handshake[.direct]!)))"
                rows.rows.append(.info("TLS 1.3 handshake p50, \(path.rawValue)", Format.micros(handshake[path]! * 1e9) + added))
            }
            for path in Path.allCases {
                let added = path == .direct ? "" : " (\(Self.signedMicros(roundTrip[path]! - roundTrip[.direct]!)))"
                rows.rows.append(.info("request round trip on a kept TLS connection p50 (h2), \(path.rawValue)", Format.micros(roundTrip[path]! * 1e9) + added))
            }
            for (label, flags, streams) in [("h1, 1 connection", ["--http1.1"], 1), ("h2, 1 connection × 4 streams", ["--http2"], 4)] {
                let direct = try await curl.throughput("https://localhost:\(ports[.direct]!)/bulk", flags: flags, streams: streams, bytes: bulk)
                let through = try await curl.throughput("https://localhost:\(ports[.intercept]!)/bulk", flags: flags, streams: streams, bytes: bulk)
                rows.rows.append(.info("throughput through interception, \(label)",
                                       "\(Format.rate(bitsPerSecond: through)) (\(Format.fixed(through / direct, 2))× direct \(Format.rate(bitsPerSecond: direct)))"))
            }
            rows.notes.append("tls: curl \(handshakes) fresh connections per path for handshakes, \(requests) requests on one kept h2 connection for round trips, \(bulk >> 20) MiB bodies for throughput; curl's own timers; the relays run in this process.")
            return rows
        }
        await passthrough.stop()
        await intercepting.stop()
        await server.stop()
        switch measured {
        case .success(let rows): section = rows
        case .failure(let error): section.rows.append(.failed("tls", error))
        }
        return section
    }

    static func median(_ values: some Collection<Double>) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }

    /// curl with netsim's CA, run as a child process; times in seconds from its `-w` variables.
    struct Curl {
        let caFile: String

        struct Times { var handshake: Double; var request: Double }

        /// One curl per URL when `fresh` (new connection and handshake each), else one curl for
        /// all (one kept connection).
        func times(_ urls: [String], fresh: Bool) async throws -> [Times] {
            let format = "%{time_connect} %{time_appconnect} %{time_pretransfer} %{time_total}\\n"
            var lines: [Substring] = []
            let batches = fresh ? urls.map { [$0] } : [urls]
            for batch in batches {
                let output = try await run(["--http2", "-w", format] + batch.flatMap { ["-o", "/dev/null", $0] })
                lines += output.split(separator: "\n")
            }
            return lines.map { line in
                let v = line.split(separator: " ").compactMap { Double($0) }
                guard v.count == 4 else { return Times(handshake: 0, request: 0) }
                return Times(handshake: v[1] - v[0], request: v[3] - v[2])
            }
        }

        /// Bits per second for `streams` parallel downloads of `bytes` each (on one connection with h2).
        func throughput(_ url: String, flags: [String], streams: Int, bytes: Int) async throws -> Double {
            let started = monotonicSeconds()
            let parallel = streams > 1 ? ["--parallel", "--parallel-max", String(streams)] : []
            _ = try await run(flags + parallel + (0..<streams).flatMap { _ in ["-o", "/dev/null", url] })
            return Double(bytes * streams * 8) / (monotonicSeconds() - started)
        }

        private func run(_ arguments: [String]) async throws -> String {
            let result = try await WatchedProcess(URL(fileURLWithPath: "/usr/bin/env"), ["curl", "-sS", "--cacert", caFile] + arguments)
                .result(within: .seconds(300))
            guard result.status == 0 else { throw RuntimeError("curl failed (\(result.status)): \(result.standardError)") }
            return result.standardOutput
        }
    }
}
