import Foundation
import Histogram
import NetsimCore
import NetsimLoopback
import NetsimLink
import NetsimRelay

/// Part 3: how close an injected delay comes to the one asked for, with the relay's release
/// timers armed early (``EarlyWakeUp``, the default) and, in the same run, armed at their
/// deadlines, so the table shows what on-time release buys on this machine and what it costs.
enum LatencyBench {
    static let target: Int64 = 200_000

    /// One configuration: a delay one way or split both ways.
    struct Setting {
        var name: String
        var link: LinkConfiguration
        var injected: Int64
    }

    static let settings = [
        Setting(name: "injected 50 ms one way", link: LinkConfiguration(up: DirectionLink(), down: DirectionLink(latency: .milliseconds(50))),
                injected: 50_000_000),
        Setting(name: "injected 25 ms each way", link: LinkConfiguration(up: DirectionLink(latency: .milliseconds(25)), down: DirectionLink(latency: .milliseconds(25))),
                injected: 50_000_000),
    ]

    struct Measured {
        var base: UInt64
        var errors: Histogram<UInt64>
        var rtts: Histogram<UInt64>
        var spin: Int64
        var seconds: Double
    }

    static func run(_ bench: BenchSettings) async throws -> BenchSection {
        let echo = try BenchServer(handler: ServerHandlers.echo)
        defer { echo.stop() }
        let samples = bench.quick ? 40 : 400
        var section = BenchSection()
        for setting in settings {
            for precise in [false, true] {
                let how = precise ? "timers armed early (default)" : "timers armed at their deadlines"
                let label = "\(setting.name), \(how)"
                let measured = await Result { try await measure(setting, precise: precise, echoPort: echo.port, samples: samples) }
                switch measured {
                case .success(let m):
                    let p50 = Double(m.errors.valueAtPercentile(50)), p90 = Double(m.errors.valueAtPercentile(90))
                    let p99 = Double(m.errors.valueAtPercentile(99))
                    let rtt = "round trip p50 \(Format.millis(Double(m.rtts.valueAtPercentile(50)))), "
                        + "p99 \(Format.millis(Double(m.rtts.valueAtPercentile(99)))) (direct p50 \(Format.micros(Double(m.base))))"
                    let cost = precise
                        ? "; spun \(Format.millis(Double(m.spin))) in \(Format.fixed(m.seconds, 1)) s (\(Format.percent(Double(m.spin) / (m.seconds * 1e9), signed: false)) of a core)"
                        : ""
                    section.rows.append(.info("\(label): \(samples) ping-pongs", rtt + cost))
                    section.rows.append(.info("\(label): |error| p50, p90", "\(Format.millis(p50)), \(Format.millis(p90))"))
                    section.rows.append(BenchRow(
                        measurement: "\(label): |error| p99", result: Format.millis(p99),
                        target: precise ? "≤ 0.2 ms" : "-",
                        verdict: precise ? Verdict.atMost(p99, Double(target), Format.millis) : "-"))
                case .failure(let error):
                    section.rows.append(.failed(label, error))
                }
            }
        }
        section.notes.append(
            "Latency error = |round trip − direct p50 − 50 ms| per ping-pong; the direct p50 is measured in the same run. "
                + "Timers armed early: by the worst wake-up lateness of the relay's last 32 long sleeps, then a spin to the deadline, "
                + "paid from a budget of 2% of a core per event loop (docs/benchmarks.md). socat has no delay to compare with.")
        return section
    }

    static func measure(_ setting: Setting, precise: Bool, echoPort: Int, samples: Int) async throws -> Measured {
        let (relay, relayPort) = try await RoundTripBench.startRelay(upstreamPort: echoPort, link: setting.link, preciseRelease: precise)
        let started = monotonicSeconds()
        let result = await Result {
            try await offload { () -> (UInt64, Histogram<UInt64>, Histogram<UInt64>) in
                let direct = try connectLoopback(echoPort)
                let relayed = try connectLoopback(relayPort)
                defer {
                    direct.close()
                    relayed.close()
                }
                direct.setReceiveTimeout(.seconds(10))
                relayed.setReceiveTimeout(.seconds(10))
                var baseline = RoundTripBench.newHistogram()
                try RoundTripBench.pingPong(direct, count: 2_000) { _ in }
                try RoundTripBench.pingPong(direct, count: 5_000) { _ = baseline.record($0) }
                let base = baseline.valueAtPercentile(50)
                try RoundTripBench.pingPong(relayed, count: 5) { _ in }  // warm-up
                var errors = RoundTripBench.newHistogram()
                var rtts = RoundTripBench.newHistogram()
                try RoundTripBench.pingPong(relayed, count: samples) { rtt in
                    _ = rtts.record(rtt)
                    _ = errors.record(UInt64(abs(Int64(rtt) - Int64(base) - setting.injected)))
                }
                return (base, errors, rtts)
            }
        }
        let seconds = monotonicSeconds() - started
        let spin = relay.releaseSpinNanoseconds
        await relay.stop()
        let (base, errors, rtts) = try result.get()
        return Measured(base: base, errors: errors, rtts: rtts, spin: spin, seconds: seconds)
    }
}
