import Foundation
import NetsimCore
import NetsimLoopback
import NetsimLink
import NetsimRelay

/// Part 4: how close the relay's down-bandwidth cap comes to the rate asked for.
enum BandwidthBench {
    static let rates: [DataRate] = [.kbit(64), .mbit(1), .mbit(100), .gbit(1)]
    static let tolerance = 0.005

    static func run(_ settings: BenchSettings) async throws -> BenchSection {
        let source = try BenchServer(handler: ServerHandlers.source(limit: 120))
        defer { source.stop() }
        var section = BenchSection()
        for rate in rates {
            // Slow rates release a few bytes per tick: give them longer so the window holds many.
            let seconds = settings.quick ? (rate.bitsPerSecond < 1e6 ? 3.0 : 1.5) : (rate.bitsPerSecond < 1e6 ? 10.0 : 5.0)
            let skip = settings.quick ? 0.5 : 1.0
            let link = LinkConfiguration(up: DirectionLink(), down: DirectionLink(bandwidth: rate))
            let (relay, port) = try await RoundTripBench.startRelay(upstreamPort: source.port, link: link)
            let measured = await Result {
                try await offload { try measure(port: port, seconds: seconds, skip: skip) }
            }
            await relay.stop()
            let label = "bandwidth \(rate) down (\(Format.fixed(seconds - skip, 1)) s after the first \(Format.fixed(skip, 1)) s)"
            switch measured {
            case .success(let bps):
                let error = bps / rate.bitsPerSecond - 1
                section.rows.append(BenchRow(
                    measurement: label,
                    result: "\(Format.rate(bitsPerSecond: bps)), error \(Format.percent(error))",
                    target: "within ±0.5%",
                    verdict: Verdict.atMost(abs(error), tolerance) { Format.percent($0, signed: false) }))
            case .failure(let error):
                section.rows.append(.failed(label, error))
            }
        }
        section.notes.append(
            "Bandwidth: a server writes continuously; the client reads through the relay and takes the rate between its first "
                + "read after the skip and its last read, so the initial burst (one packet or 1 ms worth) is excluded.")
        return section
    }

    /// Reads from `port` for `seconds`; the rate in bits per second over the part after `skip`.
    static func measure(port: Int, seconds: Double, skip: Double) throws -> Double {
        let socket = try connectLoopback(port)
        defer { socket.close() }
        socket.setReceiveTimeout(.seconds(5))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)
        defer { buffer.deallocate() }
        let start = monotonicNanoseconds()
        let skipUntil = start + Int64(skip * 1e9)
        let end = start + Int64(seconds * 1e9)
        var total = 0
        var first: (at: Int64, bytes: Int)?
        var last: (at: Int64, bytes: Int) = (start, 0)
        while last.at < end {
            let n = try socket.receiveAvailable(into: buffer)
            guard n > 0 else { throw RuntimeError("the source closed the stream after \(total) bytes") }
            total += n
            last = (monotonicNanoseconds(), total)
            if first == nil, last.at >= skipUntil { first = last }
        }
        guard let first, last.at > first.at, last.bytes > first.bytes else {
            throw RuntimeError("too few reads to measure a rate (\(total) bytes)")
        }
        return Double(last.bytes - first.bytes) * 8 / (Double(last.at - first.at) / 1e9)
    }
}
