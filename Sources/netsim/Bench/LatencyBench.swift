import Foundation
import Histogram
import NetsimCore
import NetsimLoopback
import NetsimLink
import NetsimRelay

/// Part 3: how close an injected delay comes to the one asked for, with on-time release (the
/// default: release timers armed early, ``EarlyWakeUp``, and delays counted from the kernel's
/// receive time, NetsimRelay's `TimedReads`) and, in the same run, without it, so the table shows what
/// on-time release buys on this machine and what it costs.
enum LatencyBench {
    static let target: Int64 = 200_000

    /// One configuration: a delay one way or split both ways.
    struct Setting {
        var name: String
        var link: LinkConfiguration
        var injected: Int64
        /// The same delay as Toxiproxy's latency toxics (downstream: toward the client).
        var toxics: [ToxiproxyReference.Toxic]
    }

    static let settings = [
        Setting(name: "injected 50 ms one way", link: LinkConfiguration(up: DirectionLink(), down: DirectionLink(latency: .milliseconds(50))),
                injected: 50_000_000, toxics: [.latency(50, stream: "downstream")]),
        Setting(name: "injected 25 ms each way", link: LinkConfiguration(up: DirectionLink(latency: .milliseconds(25)), down: DirectionLink(latency: .milliseconds(25))),
                injected: 50_000_000, toxics: [.latency(25, stream: "upstream"), .latency(25, stream: "downstream")]),
    ]

    /// What one measurement compares: a path with the delay and the same kind of path without it.
    struct DelayPaths {
        var delayed: Int
        var plain: Int
        /// What the delayed path spun for on-time release so far (nil: not known).
        var spin: () -> Int64?
        var stop: () async -> Void
    }

    struct Measured {
        /// Round trip p50 of the direct path and of the same relay with no delay, measured alike.
        var base: UInt64
        var pathBase: UInt64
        /// |round trip − base − injected| (what the hop and the delay add) and
        /// |round trip − pathBase − injected| (what the injected delay alone adds: the verdict).
        var errors: Histogram<UInt64>
        var pathErrors: Histogram<UInt64>
        var rtts: Histogram<UInt64>
        var spin: Int64?
        var seconds: Double
    }

    /// Who measures: threads that block in recv(2), as an app's do (their own wake-up after the
    /// delay's idle is in the figure), or one thread polling both ends (``PolledEcho``: the figure
    /// is the path's alone).
    enum Harness: CaseIterable {
        case blocking, polled

        var label: String {
            switch self {
            case .blocking: "client and echo blocking in recv"
            case .polled: "client and echo polling"
            }
        }
    }

    static func run(_ bench: BenchSettings) async throws -> BenchSection {
        let echo = try BenchServer(handler: ServerHandlers.echo)
        defer { echo.stop() }
        let samples = bench.quick ? 40 : 400
        var section = BenchSection()
        for setting in settings {
            for harness in Harness.allCases {
                for precise in [false, true] {
                    let how = precise ? "on-time release (default)" : "timers at their deadlines, delay from the read"
                    let label = "\(setting.name), \(harness.label), \(how)"
                    let measured = await Result {
                        try await measureRelay(setting, harness: harness, precise: precise, echoPort: echo.port, samples: samples)
                    }
                    switch measured {
                    case .success(let m): section.rows += rows(m, label: label, samples: samples, path: "relay", verdict: precise)
                    case .failure(let error): section.rows.append(.failed(label, error))
                    }
                }
                guard let executable = bench.toxiproxy else { continue }
                let label = "\(setting.name), \(harness.label), toxiproxy-server (reference)"
                let measured = await Result {
                    try await measure(setting, harness: harness, echoPort: echo.port, samples: samples) { upstream in
                        try await toxiproxyPaths(setting, executable: executable, upstream: upstream)
                    }
                }
                switch measured {
                case .success(let m): section.rows += rows(m, label: label, samples: samples, path: "toxiproxy", verdict: false)
                case .failure(let error): section.rows.append(.failed(label, error))
                }
            }
        }
        for precise in [false, true] {
            let how = precise ? "on-time release (default)" : "timers at their deadlines, delay from the read"
            let label = "injected 50 ms, the relay alone (kernel receive times at both ends), \(how)"
            let measured = await Result { try await measureStamped(precise: precise, samples: bench.quick ? 40 : 300) }
            switch measured {
            case .success(let m): section.rows += stampedRows(m, label: label, verdict: precise)
            case .failure(let error): section.rows.append(.failed(label, error))
            }
        }
        section.notes.append(
            "The relay alone: one way through a relay delaying 50 ms, 100 B every 50–100 ms; error = the kernel's receive time at "
                + "the receiver (SO_TIMESTAMPNS) − the sender's clock right after send(2) − 50 ms, so no measuring thread's wake-up "
                + "is in it; a message arriving less than 50 ms after the clock read before its send was released early.")
        section.notes.append(
            "Error of the delay = |round trip − the same relay's round trip p50 with no delay − 50 ms| per ping-pong (the verdict: "
                + "what injecting the delay adds, beyond the hop itself, which the rtt part measures); against direct = |round trip − "
                + "direct p50 − 50 ms|, the hop included. Both bases are measured in the same run, the same way. "
                + "Blocking: the client and the echo server sleep in recv(2), as an app does, so their own wake-ups "
                + "after the delay's idle are in the error. Polling: one thread is client and echo and spins on non-blocking reads, "
                + "so the error is the relay's alone (its release timers and its reads). "
                + "On-time release: timers armed early by the worst wake-up lateness of the relay's last 32 long sleeps, then a spin "
                + "to the deadline, paid from a budget of 2% of a core per event loop, and the delay counted from the kernel's receive "
                + "time of the bytes (SO_TIMESTAMPNS), not from the relay's read (docs/benchmarks.md). socat has no delay to compare with; "
                + "toxiproxy-server (when installed) is measured the same way with its latency toxics (jitter 0), against "
                + "one of its proxies with no toxic.")
        return section
    }

    private static func percentiles(_ h: Histogram<UInt64>, _ ps: [Double]) -> String {
        ps.map { "p\(Int($0)) \(Format.millis(Double(h.valueAtPercentile($0))))" }.joined(separator: ", ")
    }

    /// ``StampedDelay`` through a relay delaying 50 ms client → server (on-time release when `precise`).
    static func measureStamped(precise: Bool, samples: Int) async throws -> StampedDelay.Measured {
        let polled = try PolledEcho()
        defer { polled.stop() }
        let link = LinkConfiguration(up: DirectionLink(latency: .milliseconds(50)), down: DirectionLink())
        let (relay, port) = try await RoundTripBench.startRelay(upstreamPort: polled.port, link: link, preciseRelease: precise)
        let measured = await Result {
            try await offload { try StampedDelay.measure(through: port, polled: polled, injected: 50_000_000, samples: samples) }
        }
        await relay.stop()
        return try measured.get()
    }

    private static func stampedRows(_ m: StampedDelay.Measured, label: String, verdict: Bool) -> [BenchRow] {
        let p99 = Double(m.errors.valueAtPercentile(99))
        return [
            .info("\(label): \(m.samples) messages, |error| p50, p90", percentiles(m.errors, [50, 90])),
            BenchRow(
                measurement: "\(label): |error| p99", result: Format.millis(p99), target: verdict ? "≤ 0.2 ms" : "-",
                verdict: verdict ? Verdict.atMost(p99, Double(target), Format.millis) : "-"),
            BenchRow(
                measurement: "\(label): released before the delay had passed", result: "\(m.early) of \(m.samples)", target: "0",
                verdict: m.early == 0 ? "met" : "MISSED by \(m.early)"),
        ]
    }

    private static func rows(_ m: Measured, label: String, samples: Int, path: String, verdict: Bool) -> [BenchRow] {
        let p99 = Double(m.pathErrors.valueAtPercentile(99))
        let cost = m.spin.map { "; " + Format.spin(nanoseconds: $0, seconds: m.seconds) } ?? ""
        return [
            .info("\(label): \(samples) ping-pongs",
                  "round trip \(percentiles(m.rtts, [50, 99])) (direct p50 \(Format.micros(Double(m.base))), "
                    + "\(path) with no delay p50 \(Format.micros(Double(m.pathBase))))" + cost),
            .info("\(label): |error| against direct", percentiles(m.errors, [50, 90, 99])),
            .info("\(label): |error| of the delay, p50, p90", percentiles(m.pathErrors, [50, 90])),
            BenchRow(
                measurement: "\(label): |error| of the delay, p99", result: Format.millis(p99),
                target: verdict ? "≤ 0.2 ms" : "-",
                verdict: verdict ? Verdict.atMost(p99, Double(target), Format.millis) : "-"),
        ]
    }

    /// A relay with the setting's delay (release timers armed early when `precise`) and one without.
    private static func relayPaths(_ setting: Setting, precise: Bool, upstream: Int) async throws -> DelayPaths {
        let (relay, relayPort) = try await RoundTripBench.startRelay(upstreamPort: upstream, link: setting.link, preciseRelease: precise)
        do {
            let (plain, plainPort) = try await RoundTripBench.startRelay(upstreamPort: upstream)
            return DelayPaths(
                delayed: relayPort, plain: plainPort, spin: { precise ? relay.releaseSpinNanoseconds : nil },
                stop: {
                    await relay.stop()
                    await plain.stop()
                })
        } catch {
            await relay.stop()
            throw error
        }
    }

    /// Two proxies of one toxiproxy-server: one with the setting's latency toxics, one without.
    private static func toxiproxyPaths(_ setting: Setting, executable: String, upstream: Int) async throws -> DelayPaths {
        let (reference, ports) = try await ToxiproxyReference.start(
            executable: executable, proxies: [(upstream, setting.toxics), (upstream, [])])
        return DelayPaths(delayed: ports[0], plain: ports[1], spin: { nil }, stop: { reference.stop() })
    }

    /// ``measure(_:harness:echoPort:samples:paths:)`` through relays (``relayPaths(_:precise:upstream:)``).
    static func measureRelay(_ setting: Setting, harness: Harness, precise: Bool, echoPort: Int, samples: Int) async throws -> Measured {
        try await measure(setting, harness: harness, echoPort: echoPort, samples: samples) { upstream in
            try await relayPaths(setting, precise: precise, upstream: upstream)
        }
    }

    static func measure(_ setting: Setting, harness: Harness, echoPort: Int, samples: Int,
                        paths start: (_ upstream: Int) async throws -> DelayPaths) async throws -> Measured {
        let polled = harness == .polled ? try PolledEcho() : nil
        defer { polled?.stop() }
        let upstream = polled?.port ?? echoPort
        let paths = try await start(upstream)
        let delayedPort = paths.delayed, plainPort = paths.plain
        let started = monotonicSeconds()
        let result = await Result {
            try await offload { () -> Measured in
                // One path's ping-pongs, by this harness: `record` gets each round trip.
                let path: (Int) throws -> (_ count: Int, _ record: (UInt64) -> Void) throws -> Void
                var sockets: [BlockingSocket] = []
                defer { for socket in sockets { socket.close() } }
                if let polled {
                    path = { port in
                        let ends = try polled.connect(through: port)
                        sockets += [ends.client, ends.server]
                        return { count, record in try PolledEcho.pingPong(ends, count: count, record: record) }
                    }
                } else {
                    path = { port in
                        let socket = try connectLoopback(port)
                        sockets.append(socket)
                        socket.setReceiveTimeout(.seconds(10))
                        return { count, record in try RoundTripBench.pingPong(socket, count: count, record: record) }
                    }
                }
                // The round trip p50 of a path with nothing injected: 2,000 warm-up, then 5,000.
                func p50(_ pingPongs: (Int, (UInt64) -> Void) throws -> Void) throws -> UInt64 {
                    var histogram = RoundTripBench.newHistogram()
                    try pingPongs(2_000) { _ in }
                    try pingPongs(5_000) { _ = histogram.record($0) }
                    return histogram.valueAtPercentile(50)
                }
                let base = try p50(try path(upstream)), pathBase = try p50(try path(plainPort))
                let relayed = try path(delayedPort)
                try relayed(5) { _ in }  // warm-up
                var m = Measured(
                    base: base, pathBase: pathBase, errors: RoundTripBench.newHistogram(), pathErrors: RoundTripBench.newHistogram(),
                    rtts: RoundTripBench.newHistogram(), spin: nil, seconds: 0)
                try relayed(samples) { rtt in
                    _ = m.rtts.record(rtt)
                    _ = m.errors.record(UInt64(abs(Int64(rtt) - Int64(base) - setting.injected)))
                    _ = m.pathErrors.record(UInt64(abs(Int64(rtt) - Int64(pathBase) - setting.injected)))
                }
                return m
            }
        }
        let seconds = monotonicSeconds() - started
        let spin = paths.spin()
        await paths.stop()
        var measured = try result.get()
        measured.spin = spin
        measured.seconds = seconds
        return measured
    }
}
