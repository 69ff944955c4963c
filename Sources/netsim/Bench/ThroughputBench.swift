import Foundation
import NetsimCore
import NetsimLink
import NetsimLoopback
import NetsimRelay

/// Part 1: one bulk TCP stream, direct vs through the relay (unimpaired: its fast path; and with
/// `--splice`, its zero-copy path) vs socat and toxiproxy-server when installed; and through the
/// relay delaying each way by 1 ms, where it holds every buffer until its release and reads with
/// the kernel's receive times — what the delayed path costs (docs/benchmarks.md, "Held buffers
/// and the allocator").
enum ThroughputBench {
    /// iperf3's default write (the size the issue's figures were taken with) and a large one: with
    /// 1 MiB writes the direct path gets much faster and no relay keeps up (docs/benchmarks.md).
    static let writeSizes = [128 << 10, 1 << 20]
    /// Bytes per stream at most, whatever the duration.
    static let maxBytes = 64 << 30

    /// The delayed path's link: short enough that the stream is not window-bound.
    static let delayedLink = LinkConfiguration(up: DirectionLink(latency: .milliseconds(1)), down: DirectionLink(latency: .milliseconds(1)))

    /// The six paths' best streams for one write size.
    struct Paths {
        var direct = StreamResult(), relayed = StreamResult(), spliced = StreamResult(), delayed = StreamResult()
        var socat = StreamResult(), toxiproxy = StreamResult()
    }

    static func run(_ settings: BenchSettings) async throws -> BenchSection {
        let seconds = settings.quick ? 1.0 : 4.0
        let rounds = settings.quick ? 1 : 3
        let tally = SinkTally()
        let sink = try BenchServer(handler: ServerHandlers.sink(tally))
        defer { sink.stop() }
        let (relay, relayPort) = try await RoundTripBench.startRelay(upstreamPort: sink.port)
        let delayed: (relay: Relay, port: Int), spliced: (relay: Relay, port: Int)
        do {
            delayed = try await RoundTripBench.startRelay(upstreamPort: sink.port, link: delayedLink)
        } catch {
            await relay.stop()
            throw error
        }
        do {
            spliced = try await RoundTripBench.startRelay(upstreamPort: sink.port, splice: true)
        } catch {
            await relay.stop()
            await delayed.relay.stop()
            throw error
        }
        let socat = ProcFS.findOnPath("socat")
        var measured: [Paths] = []
        var toxiproxy: (reference: ToxiproxyReference, port: Int)?
        defer { toxiproxy?.reference.stop() }
        do {
            if let executable = settings.toxiproxy {
                let (reference, ports) = try await ToxiproxyReference.start(executable: executable, proxies: [(sink.port, [])])
                toxiproxy = (reference, ports[0])
            }
            // Warm up: the relay's allocators and the kernel's socket buffers.
            _ = try await offload { try stream(port: relayPort, tally: tally, seconds: 0.3, writeSize: 1 << 20) }
            _ = try await offload { try stream(port: spliced.port, tally: tally, seconds: 0.3, writeSize: 1 << 20) }
            for writeSize in writeSizes {
                var paths = Paths()
                for _ in 0..<rounds {
                    paths.direct.keepBest(try await offload { try stream(port: sink.port, tally: tally, seconds: seconds, writeSize: writeSize) })
                    paths.relayed.keepBest(try await offload { try stream(port: relayPort, tally: tally, seconds: seconds, writeSize: writeSize) })
                    paths.spliced.keepBest(try await offload { try stream(port: spliced.port, tally: tally, seconds: seconds, writeSize: writeSize) })
                    paths.delayed.keepBest(try await offload { try stream(port: delayed.port, tally: tally, seconds: seconds, writeSize: writeSize) })
                    if let socat {
                        paths.socat.keepBest(try await offload {
                            try socatStream(socat, sinkPort: sink.port, tally: tally, seconds: seconds, writeSize: writeSize)
                        })
                    }
                    if let port = toxiproxy?.port {
                        paths.toxiproxy.keepBest(try await offload { try stream(port: port, tally: tally, seconds: seconds, writeSize: writeSize) })
                    }
                }
                measured.append(paths)
            }
        } catch {
            await relay.stop()
            await delayed.relay.stop()
            await spliced.relay.stop()
            throw error
        }
        await relay.stop()
        await delayed.relay.stop()
        await spliced.relay.stop()

        var section = BenchSection()
        for (writeSize, paths) in zip(writeSizes, measured) {
            let writes = "\(writeSize >> 10) KiB writes"
            func ratio(_ result: StreamResult) -> String {
                "\(Format.fixed(result.bitsPerSecond / paths.direct.bitsPerSecond, 2))× direct: \(result.summary)"
            }
            let relayed = paths.relayed.bitsPerSecond / paths.direct.bitsPerSecond
            section.rows.append(.info("throughput, 1 stream, \(writes), direct (best of \(rounds) × \(Format.fixed(seconds, 0)) s)", paths.direct.summary))
            section.rows.append(BenchRow(
                measurement: "throughput, 1 stream, \(writes), through the relay (unimpaired)",
                result: ratio(paths.relayed), target: "≥ 0.85× direct",
                verdict: Verdict.atLeast(relayed, 0.85) { Format.fixed($0, 2) + "×" }))
            section.rows.append(.info("throughput, 1 stream, \(writes), through the relay with --splice (zero-copy)", ratio(paths.spliced)))
            section.rows.append(.info("throughput, 1 stream, \(writes), through the relay delaying 1 ms each way", ratio(paths.delayed)))
            section.rows.append(.info("throughput, 1 stream, \(writes), through socat -b 131072", socat == nil ? "not installed" : ratio(paths.socat)))
            section.rows.append(.info(
                "throughput, 1 stream, \(writes), through \(toxiproxy?.reference.label ?? "toxiproxy-server") (no toxics)",
                toxiproxy == nil ? "not installed" : ratio(paths.toxiproxy)))
        }
        section.notes.append(
            "Throughput is counted at the receiving server, from its first to its last read. The relay runs in this process "
                + "with its default two event loops; on a \(ProcessInfo.processInfo.activeProcessorCount)-core machine the client, "
                + "the relay and the server share the cores. CPU = busy CPU time of the whole machine per GB moved, "
                + "from /proc/stat, with how busy the machine was. Delaying 1 ms each way: a second relay whose link holds "
                + "every read's buffer until its release and reads with the kernel's receive times (its CPU per GB is what "
                + "the delayed path costs). --splice: a third relay forwarding with splice(2), off by default "
                + "(docs/benchmarks.md, \"Splice\"). What a bare C relay reaches here (copying and splicing): "
                + "python3 Fixtures/bench/ceiling.py (docs/benchmarks.md).")
        return section
    }

    /// One stream's rate and what it cost the machine.
    struct StreamResult: Sendable {
        var bitsPerSecond = 0.0
        var busyFraction = 0.0
        var cpuSecondsPerGigabyte = 0.0

        mutating func keepBest(_ other: StreamResult) {
            if other.bitsPerSecond > bitsPerSecond { self = other }
        }

        var summary: String {
            guard CPUMeter.available else { return "\(Format.rate(bitsPerSecond: bitsPerSecond)), CPU not measured (/proc/stat: Linux only)" }
            return "\(Format.rate(bitsPerSecond: bitsPerSecond)), CPU \(Format.fixed(cpuSecondsPerGigabyte * 1000, 0)) ms/GB "
                + "(machine \(Format.fixed(busyFraction * 100, 0))% busy)"
        }
    }

    /// Writes `writeSize` chunks to `port` for `seconds`, half-closes, and returns the rate the sink saw.
    static func stream(port: Int, tally: SinkTally, seconds: Double, writeSize: Int) throws -> StreamResult {
        try stream(socket: connectLoopback(port), tally: tally, seconds: seconds, writeSize: writeSize)
    }

    static func stream(socket: BlockingSocket, tally: SinkTally, seconds: Double, writeSize: Int) throws -> StreamResult {
        defer { socket.close() }
        let meter = CPUMeter()
        let chunk = [UInt8](repeating: 0xA5, count: writeSize)
        let deadline = monotonicSeconds() + seconds
        var sent = 0
        try chunk.withUnsafeBytes { raw in
            while sent < maxBytes, monotonicSeconds() < deadline {
                try socket.send(raw: raw)
                sent += raw.count
            }
        }
        socket.shutdownWrite()
        guard let result = tally.next(timeout: 30) else {
            throw RuntimeError("the sink did not see the end of the stream within 30 s")
        }
        guard result.bytes == sent else {
            throw RuntimeError("the sink received \(result.bytes) of the \(sent) bytes sent")
        }
        let cpu = meter.elapsed()
        return StreamResult(
            bitsPerSecond: result.bitsPerSecond, busyFraction: cpu.busyFraction,
            cpuSecondsPerGigabyte: cpu.busySeconds / (Double(result.bytes) / 1e9))
    }

    /// The same stream through `socat -b 131072 TCP-LISTEN:P,… TCP:127.0.0.1:SINK` (one connection).
    static func socatStream(_ socat: String, sinkPort: Int, tally: SinkTally, seconds: Double, writeSize: Int) throws -> StreamResult {
        let port = try freeLoopbackPort()
        let child = try ChildProcess(
            name: "socat", executable: socat,
            arguments: ["-b", "131072", "TCP-LISTEN:\(port),bind=127.0.0.1,reuseaddr", "TCP:127.0.0.1:\(sinkPort)"],
            captureStandardError: false)
        defer { child.stop() }
        let socket = try connectLoopback(port, retryingFor: 5)
        let rate = try stream(socket: socket, tally: tally, seconds: seconds, writeSize: writeSize)
        _ = child.waitForExit(timeout: 2)
        return rate
    }
}
