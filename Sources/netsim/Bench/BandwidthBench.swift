import Foundation
import NetsimCore
import NetsimLoopback
import NetsimLink
import NetsimRelay

/// Part 4: how close the relay's down-bandwidth cap comes to the rate asked for, measured as a
/// user sees a download: from the request to the answer's last byte.
///
/// Measuring from the first byte is the point: a model that let the start of a burst go at once
/// (as this relay's used to) is exact in the steady state and early on every short answer, and
/// only a from-the-first-byte figure shows it. Short answers (10 KB, 100 KB) are where users see it.
enum BandwidthBench {
    static let tolerance = 0.005

    /// One row: `bytes` downloaded at `rate`, `repeats` times (each a fresh burst on an idle link).
    struct Transfer {
        var rate: DataRate
        var bytes: Int
        var what: String
        var repeats: Int
    }

    static func transfers(quick: Bool) -> [Transfer] {
        let seconds = quick ? 1.5 : 5.0
        var list: [Transfer] = [DataRate.kbit(64), .mbit(1), .mbit(100), .gbit(1)].map { rate in
            Transfer(rate: rate, bytes: Int(rate.bytesPerSecond * seconds), what: "\(Format.fixed(seconds, 1)) s download", repeats: 1)
        }
        for rate in [DataRate.kbit(64), .mbit(1)] {
            for bytes in [10_000, 100_000] {
                let ideal = Double(bytes) / rate.bytesPerSecond
                // Short ones are repeated: a single release that wakes late weighs more there.
                let repeats = quick ? 1 : (ideal < 2 ? 5 : 1)
                list.append(Transfer(rate: rate, bytes: bytes, what: "\(bytes / 1000) KB answer", repeats: repeats))
            }
        }
        return list
    }

    static func run(_ settings: BenchSettings) async throws -> BenchSection {
        let server = try BenchServer(handler: ServerHandlers.sizedAnswers)
        defer { server.stop() }
        var section = BenchSection()
        // The direct time from request to a 1-byte answer: what is not the link's serialization.
        let base: Int64
        do {
            base = try await offload { try directFirstByte(port: server.port) }
            section.rows.append(.info(
                "bandwidth rows' baseline: request → 1-byte answer, direct, p50 (200)", Format.micros(Double(base))))
        } catch {
            section.rows.append(.failed("bandwidth rows' baseline", error))
            return section
        }
        for transfer in transfers(quick: settings.quick) {
            let rate = transfer.rate
            let label = "bandwidth \(rate) down, \(transfer.what) from the request"
                + (transfer.repeats > 1 ? " (worst of \(transfer.repeats))" : "")
            section.rows.append(await row(transfer, label: label, base: base, serverPort: server.port, verdict: true) { upstream in
                let link = LinkConfiguration(up: DirectionLink(), down: DirectionLink(bandwidth: rate))
                let (relay, port) = try await RoundTripBench.startRelay(upstreamPort: upstream, link: link)
                return (port, { await relay.stop() })
            })
            // Toxiproxy's rate is whole KB/s: every rate here is one.
            guard let executable = settings.toxiproxy else { continue }
            let kilobytes = Int((rate.bytesPerSecond / 1000).rounded())
            section.rows.append(await row(transfer, label: "toxiproxy-server (reference): " + label, base: base, serverPort: server.port,
                                          verdict: false) { upstream in
                let (reference, ports) = try await ToxiproxyReference.start(
                    executable: executable, proxies: [(upstream, [.bandwidth(kilobytesPerSecond: kilobytes)])])
                return (ports[0], { reference.stop() })
            })
        }
        section.notes.append(
            "Bandwidth: the client asks for N bytes (an 8-byte request on an open connection, the link idle) and times the "
                + "request to the answer's last byte; rate = N × 8 / (that time − the direct request → 1-byte answer p50), "
                + "error = rate / cap − 1 (+ is too fast: bytes early). A real link takes N × 8 / rate from the first byte. "
                + "Direct: the same download without the relay, for reference. socat has no bandwidth cap to compare with; "
                + "toxiproxy-server (when installed) is measured the same way with its bandwidth toxic (rate in KB/s of 1000 bytes).")
        return section
    }

    /// One transfer's row through a path `start` opens to the server (and whose stop it returns).
    private static func row(
        _ transfer: Transfer, label: String, base: Int64, serverPort: Int, verdict: Bool,
        start: (_ upstream: Int) async throws -> (port: Int, stop: () async -> Void)
    ) async -> BenchRow {
        let measured = await Result { () -> (through: [Int64], direct: Int64) in
            let (port, stop) = try await start(serverPort)
            let result = await Result {
                try await offload {
                    (try downloads(port: port, bytes: transfer.bytes, repeats: transfer.repeats),
                     try downloads(port: serverPort, bytes: transfer.bytes, repeats: 1)[0])
                }
            }
            await stop()
            return try result.get()
        }
        switch measured {
        case .success(let (through, direct)):
            let ideal = Double(transfer.bytes) / transfer.rate.bytesPerSecond * 1e9
            let errors = through.map { ideal / Double($0 - base) - 1 }
            let worst = errors.max { abs($0) < abs($1) }!
            let elapsed = through[errors.firstIndex(of: worst)!]
            return BenchRow(
                measurement: label,
                result: "\(Format.rate(bitsPerSecond: Double(transfer.bytes) * 8e9 / Double(elapsed - base))), "
                    + "\(Format.seconds(Double(elapsed))) for \(Format.seconds(ideal)), error \(Format.percent(worst)) "
                    + "(direct \(Format.seconds(Double(direct))))",
                target: verdict ? "within ±0.5%" : "-",
                verdict: verdict ? Verdict.atMost(abs(worst), tolerance) { Format.percent($0, signed: false) } : "-")
        case .failure(let error):
            return .failed(label, error)
        }
    }

    /// The p50 of 200 requests for a 1-byte answer, direct (after 20 warm-ups).
    static func directFirstByte(port: Int) throws -> Int64 {
        let times = try downloads(port: port, bytes: 1, repeats: 200, warmUps: 20)
        return times.sorted()[times.count / 2]
    }

    /// Opens a connection to `port` and times `repeats` downloads of `bytes` on it, each from the
    /// request to the last byte, after a 1-byte exchange (or `warmUps` of them) that sets the
    /// connection up end to end.
    static func downloads(port: Int, bytes: Int, repeats: Int, warmUps: Int = 1) throws -> [Int64] {
        let socket = try connectLoopback(port)
        defer { socket.close() }
        socket.setReceiveTimeout(.seconds(60))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)
        defer { buffer.deallocate() }
        for _ in 0..<warmUps { _ = try download(socket, bytes: 1, buffer: buffer) }
        return try (0..<repeats).map { _ in try download(socket, bytes: bytes, buffer: buffer) }
    }

    /// Asks for `bytes` and reads them all: nanoseconds from the request to the last byte.
    static func download(_ socket: BlockingSocket, bytes: Int, buffer: UnsafeMutableRawBufferPointer) throws -> Int64 {
        var request = UInt64(bytes).bigEndian
        let start = monotonicNanoseconds()
        try withUnsafeBytes(of: &request) { try socket.send(raw: $0) }
        var received = 0
        while received < bytes {
            let n = try socket.receiveAvailable(
                into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<min(buffer.count, bytes - received)]))
            guard n > 0 else { throw RuntimeError("the server closed the stream after \(received) of \(bytes) bytes") }
            received += n
        }
        return monotonicNanoseconds() - start
    }
}
