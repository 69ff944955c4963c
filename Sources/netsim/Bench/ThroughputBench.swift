import Foundation
import NetsimCore
import NetsimLoopback
import NetsimRelay

/// Part 1: one bulk TCP stream, direct vs through the relay (unimpaired: its fast path) vs socat.
enum ThroughputBench {
    static let writeSize = 1 << 20
    /// Bytes per stream at most, whatever the duration.
    static let maxBytes = 64 << 30

    static func run(_ settings: BenchSettings) async throws -> BenchSection {
        let seconds = settings.quick ? 1.0 : 4.0
        let rounds = settings.quick ? 1 : 3
        let tally = SinkTally()
        let sink = try BenchServer(handler: ServerHandlers.sink(tally))
        defer { sink.stop() }
        let relay = Relay(
            configuration: RelayConfiguration(upstream: Endpoint(host: "127.0.0.1", port: sink.port)),
            eventLog: EventLog(retention: 0))
        let relayPort: Int
        do {
            relayPort = try await relay.start().port
        } catch {
            await relay.stop()
            throw error
        }
        let socat = ProcFS.findOnPath("socat")
        var direct = StreamResult(), relayed = StreamResult(), viaSocat = StreamResult()
        do {
            // Warm up: the relay's allocators and the kernel's socket buffers.
            _ = try await offload { try stream(port: relayPort, tally: tally, seconds: 0.3) }
            for _ in 0..<rounds {
                direct.keepBest(try await offload { try stream(port: sink.port, tally: tally, seconds: seconds) })
                relayed.keepBest(try await offload { try stream(port: relayPort, tally: tally, seconds: seconds) })
                if let socat {
                    viaSocat.keepBest(try await offload {
                        try socatStream(socat, sinkPort: sink.port, tally: tally, seconds: seconds)
                    })
                }
            }
        } catch {
            await relay.stop()
            throw error
        }
        await relay.stop()

        let ratio = relayed.bitsPerSecond / direct.bitsPerSecond
        var section = BenchSection()
        let runs = "best of \(rounds) × \(Format.fixed(seconds, 0)) s, \(writeSize >> 10) KiB writes"
        section.rows.append(.info("throughput, 1 stream, direct (\(runs))", direct.summary))
        section.rows.append(BenchRow(
            measurement: "throughput, 1 stream, through the relay (unimpaired)",
            result: "\(Format.fixed(ratio, 2))× direct: \(relayed.summary)",
            target: "≥ 0.85× direct",
            verdict: Verdict.atLeast(ratio, 0.85) { Format.fixed($0, 2) + "×" }))
        if socat != nil {
            section.rows.append(.info(
                "throughput, 1 stream, through socat -b 131072",
                "\(Format.fixed(viaSocat.bitsPerSecond / direct.bitsPerSecond, 2))× direct: \(viaSocat.summary)"))
        } else {
            section.rows.append(.info("throughput, 1 stream, through socat", "not installed"))
        }
        section.notes.append(
            "Throughput is counted at the receiving server, from its first to its last read. The relay runs in this process "
                + "with its default two event loops; on a \(ProcessInfo.processInfo.activeProcessorCount)-core machine the client, "
                + "the relay and the server share the cores. CPU = busy CPU time of the whole machine per GB moved, "
                + "from /proc/stat, with how busy the machine was.")
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

    /// Writes 1 MiB chunks to `port` for `seconds`, half-closes, and returns the rate the sink saw.
    static func stream(port: Int, tally: SinkTally, seconds: Double) throws -> StreamResult {
        try stream(socket: connectLoopback(port), tally: tally, seconds: seconds)
    }

    static func stream(socket: BlockingSocket, tally: SinkTally, seconds: Double) throws -> StreamResult {
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
    static func socatStream(_ socat: String, sinkPort: Int, tally: SinkTally, seconds: Double) throws -> StreamResult {
        let port = try freeLoopbackPort()
        let child = try ChildProcess(
            name: "socat", executable: socat,
            arguments: ["-b", "131072", "TCP-LISTEN:\(port),bind=127.0.0.1,reuseaddr", "TCP:127.0.0.1:\(sinkPort)"],
            captureStandardError: false)
        defer { child.stop() }
        let socket = try connectLoopback(port, retryingFor: 5)
        let rate = try stream(socket: socket, tally: tally, seconds: seconds)
        _ = child.waitForExit(timeout: 2)
        return rate
    }
}
