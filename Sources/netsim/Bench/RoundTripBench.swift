import Foundation
import Histogram
import NetsimCore
import NetsimLoopback
import NetsimLink
import NetsimRelay

/// Part 2: 100-byte ping-pongs against an echo server, direct and through the relay (part 3, ``LatencyBench``, uses them too).
enum RoundTripBench {
    static let messageSize = 100

    static func newHistogram() -> Histogram<UInt64> {
        Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
    }

    /// `count` ping-pongs on an open connection; each round trip (ns) goes to `record`.
    static func pingPong(_ socket: BlockingSocket, count: Int, record: (UInt64) -> Void) throws {
        let message = [UInt8](repeating: 0x42, count: messageSize)
        let reply = UnsafeMutableRawBufferPointer.allocate(byteCount: messageSize, alignment: 16)
        defer { reply.deallocate() }
        try message.withUnsafeBytes { raw in
            for _ in 0..<count {
                let start = monotonicNanoseconds()
                try socket.send(raw: raw)
                guard try socket.receiveAll(into: reply) else {
                    throw RuntimeError("the echo server closed the connection")
                }
                record(UInt64(monotonicNanoseconds() - start))
            }
        }
    }

    /// Starts an in-process relay to `upstreamPort` with `link`.
    static func startRelay(upstreamPort: Int, link: LinkConfiguration = .unimpaired, preciseRelease: Bool = true,
                           splice: Bool = false) async throws -> (Relay, Int) {
        let relay = Relay(
            configuration: RelayConfiguration(
                upstream: Endpoint(host: "127.0.0.1", port: upstreamPort), link: link, preciseRelease: preciseRelease, splice: splice),
            eventLog: EventLog(retention: 0))
        do {
            return (relay, try await relay.start().port)
        } catch {
            await relay.stop()
            throw error
        }
    }

    // MARK: Part 2: added round trip

    static func runAddedRoundTrip(_ settings: BenchSettings) async throws -> BenchSection {
        let echo = try BenchServer(handler: ServerHandlers.echo)
        defer { echo.stop() }
        let (relay, relayPort) = try await startRelay(upstreamPort: echo.port)
        let perPath = settings.quick ? 5_000 : 50_000
        let measured = await Result { () -> (spread: Paths, pinned: Paths?) in
            let spread = try await offload {
                try measurePaths(echoPort: echo.port, relayPort: relayPort, perPath: perPath, toxiproxy: settings.toxiproxy)
            }
            let pinned = try await CPUAffinity.whilePinned(to: 0) {
                try await offload {
                    try measurePaths(echoPort: echo.port, relayPort: relayPort, perPath: perPath, toxiproxy: settings.toxiproxy)
                }
            }
            return (spread, pinned)
        }
        await relay.stop()
        let (spread, pinned) = try measured.get()

        var section = BenchSection()
        let count = Format.count(perPath)
        if let pinned {
            section.rows += rows(pinned, setting: "one core", count: count, verdicts: true)
            section.rows += rows(spread, setting: "2 cores", count: count, verdicts: false)
        } else {
            section.rows += rows(spread, setting: "2 cores", count: count, verdicts: true)
        }
        section.notes.append(
            "Round trips: one connection per path, 2,000 warm-up ping-pongs each, then 10 alternating blocks; "
                + "added = path percentile − direct percentile (HdrHistogram, 3 significant digits); socat runs with nodelay. "
                + "\"one core\": every thread of the benchmark, the relay and socat pinned to CPU 0 (repeatable; the verdict). "
                + "\"2 cores\": default scheduling, which on this VM varies run to run: a ping-pong between two threads on two vCPUs "
                + "pays an inter-processor wake-up through the hypervisor on every hop.")
        return section
    }

    /// Each path's round trips: direct and the relay, then the references that are installed.
    struct Paths: Sendable {
        var direct: Histogram<UInt64>
        var relayed: Histogram<UInt64>
        var socat: Histogram<UInt64>?
        var toxiproxy: (label: String, histogram: Histogram<UInt64>)?
    }

    /// Direct, relay and (if installed) socat and toxiproxy-server, `perPath` ping-pongs each in
    /// alternating blocks. The references start here, so a pinned run pins them too.
    private static func measurePaths(echoPort: Int, relayPort: Int, perPath: Int, toxiproxy executable: String?,
                                     blocks: Int = 10) throws -> Paths {
        var socat: ChildProcess?
        var toxiproxy: ToxiproxyReference?
        defer {
            socat?.stop()
            toxiproxy?.stop()
        }
        var sockets = [try connectLoopback(echoPort), try connectLoopback(relayPort)]
        defer { for socket in sockets { socket.close() } }
        if let path = ProcFS.findOnPath("socat") {
            let port = try freeLoopbackPort()
            socat = try ChildProcess(
                name: "socat", executable: path,
                arguments: ["TCP-LISTEN:\(port),bind=127.0.0.1,reuseaddr,nodelay", "TCP:127.0.0.1:\(echoPort),nodelay"],
                captureStandardError: false)
            sockets.append(try connectLoopback(port, retryingFor: 5))
        }
        if let executable {
            let reference = try ToxiproxyReference(executable: executable)
            toxiproxy = reference
            sockets.append(try connectLoopback(try reference.proxy(to: echoPort)))
        }
        for socket in sockets {
            socket.setReceiveTimeout(.seconds(10))
            try pingPong(socket, count: 2_000) { _ in }  // warm-up
        }
        var histograms = sockets.map { _ in newHistogram() }
        // Alternate blocks so every path sees the same machine conditions.
        for _ in 0..<blocks {
            for (index, socket) in sockets.enumerated() {
                try pingPong(socket, count: perPath / blocks) { _ = histograms[index].record($0) }
            }
        }
        return Paths(
            direct: histograms[0], relayed: histograms[1], socat: socat == nil ? nil : histograms[2],
            toxiproxy: toxiproxy.map { ($0.label, histograms[histograms.count - 1]) })
    }

    /// Rows for one set of measurements: each path's percentiles, and what the relay and the references add.
    private static func rows(_ paths: Paths, setting: String, count: String, verdicts: Bool) -> [BenchRow] {
        let direct = paths.direct, relayed = paths.relayed
        func percentiles(_ h: Histogram<UInt64>) -> String {
            "p50 \(Format.micros(Double(h.valueAtPercentile(50)))), p99 \(Format.micros(Double(h.valueAtPercentile(99))))"
        }
        func added(_ h: Histogram<UInt64>, _ percentile: Double) -> Double {
            Double(h.valueAtPercentile(percentile)) - Double(direct.valueAtPercentile(percentile))
        }
        func addedPercentiles(_ h: Histogram<UInt64>?) -> String {
            h.map { "p50 \(Format.micros(added($0, 50))), p99 \(Format.micros(added($0, 99)))" } ?? "not installed"
        }
        var rows: [BenchRow] = [
            .info("round trip, 100 B ping-pong, \(setting): direct (\(count))", percentiles(direct)),
            .info("round trip, 100 B ping-pong, \(setting): through the relay", percentiles(relayed)),
        ]
        if verdicts {
            rows.append(BenchRow(
                measurement: "round trip added by the relay, \(setting), p50", result: Format.micros(added(relayed, 50)),
                target: "≤ 15 µs", verdict: Verdict.atMost(added(relayed, 50), 15_000, Format.micros)))
            rows.append(BenchRow(
                measurement: "round trip added by the relay, \(setting), p99", result: Format.micros(added(relayed, 99)),
                target: "≤ 30 µs", verdict: Verdict.atMost(added(relayed, 99), 30_000, Format.micros)))
        } else {
            rows.append(.info("round trip added by the relay, \(setting)", addedPercentiles(relayed)))
        }
        rows.append(.info("round trip added by socat (reference), \(setting)", addedPercentiles(paths.socat)))
        if verdicts, let socat = paths.socat {
            // Issue 13's second goal: whatever the absolute figure, never more than socat adds.
            let excess = [50.0, 99.0].map { added(relayed, $0) - added(socat, $0) }
            rows.append(BenchRow(
                measurement: "round trip added by the relay minus socat's, \(setting), p50 / p99",
                result: excess.map(Format.micros).joined(separator: " / "), target: "≤ 0 (never above socat)",
                verdict: Verdict.atMost(excess.max()!, 0, Format.micros)))
        }
        rows.append(.info(
            "round trip added by \(paths.toxiproxy?.label ?? "toxiproxy-server") (reference), \(setting)",
            addedPercentiles(paths.toxiproxy?.histogram)))
        return rows
    }
}

extension Result where Failure == any Error {
    /// Captures the outcome of async work so cleanup can run before the error is rethrown.
    init(_ body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
