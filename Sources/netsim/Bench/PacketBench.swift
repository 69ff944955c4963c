#if canImport(Glibc)
import Foundation
import Glibc
import NetsimCore
import NetsimLink
import NetsimLoopback
import NetsimPacket

/// The packet part: `netsim shell`'s packet path measured as a user meets it, beside the relay
/// in the same run — delay error, rate error, real kernel TCP under loss against the Mathis
/// formula, the unimpaired ceiling and the CPU each path spends per GB. Linux and root only: on
/// any other machine the part says what is missing and measures nothing.
enum PacketBench {
    static let delayTarget: Int64 = 200_000
    static let rateTolerance = 0.005
    static let mathisTolerance = 0.30
    /// Payload of a full 1500-byte packet with TCP timestamps (20 IP + 32 TCP bytes of header).
    static let payloadShare = 1448.0 / 1500.0

    struct Tools {
        var iperf3: String
        var python: String
    }

    static func run(_ settings: BenchSettings) async throws -> BenchSection {
        var section = BenchSection()
        if let missing = PacketShellRequirements.missing() {
            section.notes.append("packet part not measured: netsim shell \(missing)")
            return section
        }
        guard let iperf3 = ProcFS.findOnPath("iperf3"), let python = ProcFS.findOnPath("python3") else {
            section.rows.append(.failed("packet part", RuntimeError("needs iperf3 and python3 on PATH (ci/setup installs them)")))
            return section
        }
        let tools = Tools(iperf3: iperf3, python: python)
        let steps: [(String, (Tools, BenchSettings) async throws -> [BenchRow])] = [
            ("delay", delay), ("rate", rates), ("loss", loss), ("ceiling", ceiling),
        ]
        for (name, step) in steps {
            do { section.rows += try await step(tools, settings) } catch { section.rows.append(.failed("packet part, \(name)", error)) }
        }
        section.notes.append(
            "Packet rows: netsim shell's path (a namespace, two TUN devices, one thread); relay rows: the relay on loopback, in "
                + "the same run. Delay: 100-byte TCP ping-pongs (Python), |RTT − unimpaired RTT p50 − 50 ms|. Rate: a download "
                + "(Python, the same client on both paths), goodput after its first second (--quick: half second); the packet path serializes whole "
                + "IP packets, so its goodput is rate × 1448/1500 (full packets with TCP timestamps), the relay's the rate; its server "
                + "sends with CUBIC (BBR, the default, sometimes leaves a 1 Mbit/s link idle for a packet slot). Loss: "
                + "iperf3 with CUBIC (this machine's default, BBR, does not back off on loss), loss on the data direction only, "
                + "against Mathis MSS/RTT × 1.22/√p (MSS 1448); the relay row is its loss model on the same link. CPU per GB: "
                + "netsim's own process (getrusage), not the clients'.")
        return section
    }

    // MARK: Delay

    static func delay(_ tools: Tools, _ settings: BenchSettings) async throws -> [BenchRow] {
        let samples = settings.quick ? 40 : 400
        let each = DirectionLink(latency: .milliseconds(25))
        let base = try await pingPongs(tools, link: PacketLinkConfiguration(), samples: 500).rtts.sorted()[250]
        let delayed = try await pingPongs(tools, link: PacketLinkConfiguration(up: PacketDirectionLink(base: each), down: PacketDirectionLink(base: each)), samples: samples)
        var rows = errorRows(delayed.rtts.map { UInt64(abs($0 - base - 50_000_000)) }, label: "packet: injected 25 ms each way", samples: samples,
                             base: "unimpaired round trip p50 \(Format.micros(Double(base))); \(delayed.spin)")
        let echo = try BenchServer(handler: ServerHandlers.echo)
        defer { echo.stop() }
        let relay = try await LatencyBench.measureRelay(LatencyBench.settings[1], harness: .blocking, precise: true, echoPort: echo.port, samples: samples)
        var errors: [UInt64] = []
        for value in relay.pathErrors.recordedValues() { errors += Array(repeating: value.value, count: Int(value.count)) }
        rows += errorRows(errors, label: "relay: injected 25 ms each way", samples: samples,
                          base: "unimpaired round trip p50 \(Format.micros(Double(relay.pathBase)))")
        return rows
    }

    /// Ping-pongs from inside a shell with `link` to an echo server on its host side; the round
    /// trips, and what the path's thread spun for on-time release meanwhile.
    static func pingPongs(_ tools: Tools, link: PacketLinkConfiguration, samples: Int) async throws -> (rtts: [Int64], spin: String) {
        let session = try PacketBenchSession(link: link)
        defer { session.close() }
        let echo = try BenchServer(host: session.host, handler: ServerHandlers.echo)
        defer { echo.stop() }
        let started = monotonicSeconds()
        let output = try await offload {
            try session.run([tools.python, "-c", BenchPython.pingPong, session.host, String(echo.port), String(samples)],
                            timeout: 30 + Double(samples) * 0.2)
        }
        let spin = Format.spin(nanoseconds: session.shell.path.spunNanoseconds, seconds: monotonicSeconds() - started)
        let values = output.split(whereSeparator: \.isWhitespace).compactMap { Int64($0) }
        guard values.count == samples else { throw RuntimeError("the ping-pong client printed \(values.count) of \(samples) round trips") }
        return (values, spin)
    }

    static func errorRows(_ errors: [UInt64], label: String, samples: Int, base: String) -> [BenchRow] {
        let sorted = errors.sorted()
        let p50 = Double(sorted[sorted.count / 2]), p99 = Double(sorted[min(sorted.count - 1, sorted.count * 99 / 100)])
        return [
            .info("\(label): \(samples) ping-pongs, |error| p50", "\(Format.millis(p50)) (\(base))"),
            BenchRow(measurement: "\(label): |error| p99", result: Format.millis(p99), target: "≤ 0.2 ms",
                     verdict: Verdict.atMost(p99, Double(delayTarget), Format.millis)),
        ]
    }

    // MARK: Rate

    static func rates(_ tools: Tools, _ settings: BenchSettings) async throws -> [BenchRow] {
        let seconds = settings.quick ? 1.5 : 3.0
        let skip = settings.quick ? 0.5 : 1.0
        var rows: [BenchRow] = []
        for rate in [DataRate.mbit(1), .mbit(10), .mbit(100)] {
            let bytes = Int(rate.bytesPerSecond * seconds)
            let session = try PacketBenchSession(link: PacketLinkConfiguration(
                up: PacketDirectionLink(base: DirectionLink(bandwidth: rate)), down: PacketDirectionLink(base: DirectionLink(bandwidth: rate))))
            let measured = await Result { () async throws -> Double in
                let server = try BenchServer(host: session.host) { socket in
                    sendWithCUBIC(socket)
                    ServerHandlers.sizedAnswers(socket)
                }
                defer { server.stop() }
                return try await offload {
                    try goodput(try session.run([tools.python, "-c", BenchPython.download, session.host, String(server.port), String(bytes), String(skip)],
                                                timeout: 30 + seconds * 3))
                }
            }
            // What the path did with the download's packets: a drop costs TCP a packet slot or more.
            let down = session.close().down
            let drops = down.queueFull + down.lost + down.writeFailed
            rows.append(rateRow("packet: rate \(rate) down, goodput after \(Format.fixed(skip, 1)) s of a \(Format.fixed(seconds, 1)) s download",
                                measured, expected: rate.bytesPerSecond * 8 * payloadShare,
                                note: "expected rate × 1448/1500; the path dropped \(Format.count(drops)) of \(Format.count(down.received)) packets"))
            let relayed = await Result { () async throws -> Double in
                let server = try BenchServer(handler: ServerHandlers.sizedAnswers)
                defer { server.stop() }
                let (relay, port) = try await RoundTripBench.startRelay(upstreamPort: server.port, link: LinkConfiguration(up: DirectionLink(), down: DirectionLink(bandwidth: rate)))
                let output = await Result {
                    try await offload { try capturedOutput(tools.python, ["-c", BenchPython.download, "127.0.0.1", String(port), String(bytes), String(skip)], timeout: 30 + seconds * 3) }
                }
                await relay.stop()
                return try goodput(try output.get())
            }
            rows.append(rateRow("relay: rate \(rate) down, goodput after \(Format.fixed(skip, 1)) s of a \(Format.fixed(seconds, 1)) s download",
                                relayed, expected: rate.bytesPerSecond * 8, note: "expected the rate"))
        }
        return rows
    }

    /// Makes `socket` send with CUBIC (a no-op where the kernel lacks it), as iperf3 does in the
    /// loss rows. Why, for the packet path's rate rows: with BBR, this machine's default, the sender
    /// sometimes paces itself below a 1 Mbit/s bottleneck whose bandwidth-delay product is about
    /// one packet and leaves the link idle for ~15 ms: a packet slot, −0.6 to −0.75% of the row's
    /// goodput, in 9 of 29 standalone runs (with or without early wake-up), with every packet
    /// released on time and none dropped (a capture shows the queue empty and the next burst
    /// sent late). CUBIC keeps the queue full (0 of 22 runs lost a slot), so the row measures
    /// the link, not the sender.
    static func sendWithCUBIC(_ socket: BlockingSocket) {
        #if os(Linux)
        var name = Array("cubic".utf8)
        _ = setsockopt(socket.fd, Int32(IPPROTO_TCP), TCP_CONGESTION, &name, socklen_t(name.count))
        #endif
    }

    /// Bits per second from the download client's "BYTES NANOSECONDS".
    static func goodput(_ output: String) throws -> Double {
        let fields = output.split(whereSeparator: \.isWhitespace).compactMap { Double($0) }
        guard fields.count == 2, fields[1] > 0 else { throw RuntimeError("the download client printed '\(output.prefix(80))'") }
        return fields[0] * 8e9 / fields[1]
    }

    static func rateRow(_ label: String, _ measured: Result<Double, any Error>, expected: Double, note: String) -> BenchRow {
        switch measured {
        case .success(let bps):
            let error = bps / expected - 1
            return BenchRow(measurement: label, result: "\(Format.rate(bitsPerSecond: bps)), error \(Format.percent(error)) (\(note))",
                            target: "within ±0.5%", verdict: Verdict.atMost(abs(error), rateTolerance) { Format.percent($0, signed: false) })
        case .failure(let error):
            return .failed(label, error)
        }
    }

    // MARK: Loss

    static func loss(_ tools: Tools, _ settings: BenchSettings) async throws -> [BenchRow] {
        let seconds = settings.quick ? 5 : 10
        var rows: [BenchRow] = []
        for percent in settings.quick ? [2.0] : [1.0, 2.0] {
            let loss = LossModel.bernoulli(Probability(fraction: percent / 100))
            let mathis = LossThroughputSimulation.mathisBytesPerSecond(mss: 1448, rtt: .milliseconds(50), loss: percent / 100) * 8
            let session = try PacketBenchSession(link: PacketLinkConfiguration(
                up: PacketDirectionLink(base: DirectionLink(latency: .milliseconds(25), loss: loss)),
                down: PacketDirectionLink(base: DirectionLink(latency: .milliseconds(25)))))
            let label = "packet: kernel TCP (CUBIC) at \(Format.fixed(percent, 0))% loss, 50 ms round trip, iperf3 \(seconds) s"
            let measured = await Result { () async throws -> (Double, PacketCounters) in
                let bps: Double
                do {
                    bps = try await iperf(tools, session: session, arguments: ["-C", "cubic", "-t", String(seconds), "-O", "2"], timeout: Double(seconds) + 30)
                } catch {
                    _ = session.close()
                    throw error
                }
                return (bps, session.close())
            }
            switch measured {
            case .success(let (bps, counters)):
                // What the path dropped of what the sender sent: the loss TCP saw, whatever it made of it.
                let dropped = Double(counters.up.lost) / Double(max(1, counters.up.received))
                rows.append(BenchRow(
                    measurement: label,
                    result: "\(Format.rate(bitsPerSecond: bps)), \(Format.fixed(bps / mathis, 2))× Mathis (\(Format.rate(bitsPerSecond: mathis))); "
                        + "the path dropped \(Format.count(counters.up.lost)) of \(Format.count(counters.up.received)) packets "
                        + "(\(Format.percent(dropped, signed: false)))",
                    target: "within ±30% of Mathis", verdict: Verdict.atMost(abs(bps / mathis - 1), mathisTolerance) { Format.percent($0, signed: false) }))
            case .failure(let error):
                rows.append(.failed(label, error))
            }
            let model = LossThroughputSimulation.run(link: DirectionLink(latency: .milliseconds(25), loss: loss), roundTripNanoseconds: 50_000_000,
                                                     bytes: 20_000_000, seed: 1) * 8
            rows.append(.info("relay: its loss model, the same link, 20 MB", "\(Format.rate(bitsPerSecond: model)), \(Format.fixed(model / mathis, 2))× Mathis"))
        }
        return rows
    }

    /// iperf3 from inside `session` to a server on its host side; the receiver's bits per second.
    static func iperf(_ tools: Tools, session: PacketBenchSession, arguments: [String], timeout: Double) async throws -> Double {
        let port = try freeLoopbackPort()
        let server = try ChildProcess(name: "iperf3 server", executable: tools.iperf3, arguments: ["-s", "-B", session.host, "-p", String(port)],
                                      captureStandardError: false)
        defer { server.stop() }
        return try await iperfClient(serverPort: port, host: session.host) {
            try session.run([tools.iperf3, "-c", session.host, "-p", String(port), "-J"] + arguments, timeout: timeout)
        }
    }

    /// Runs an iperf3 client (`run`, with `-J` among its arguments) once the iperf3 server on
    /// `serverPort` listens, and returns the receiver's bits per second. A run that exits
    /// non-zero or whose JSON carries no result (iperf3 answers `{"error": …}` when its test
    /// could not start; it still exits 0) is tried again, up to 5 times; the last failure is the error.
    static func iperfClient(serverPort: Int, host: String, listenTimeout: Double = 10, _ run: @escaping @Sendable () throws -> String) async throws -> Double {
        try await offload { () throws -> Double in
            let deadline = monotonicSeconds() + listenTimeout
            while ProcFS.isListening(port: serverPort, on: host) == false {
                guard monotonicSeconds() < deadline else {
                    throw RuntimeError("the iperf3 server did not listen on port \(serverPort) within \(Format.fixed(listenTimeout, 1)) s")
                }
                usleep(20_000)
            }
            var last: (any Error)?
            for _ in 0..<5 {
                do {
                    return try receivedBitsPerSecond(iperfJSON: try run())
                } catch {
                    last = error
                    usleep(200_000)
                }
            }
            throw last ?? RuntimeError("iperf3 did not run")
        }
    }

    /// `end.sum_received.bits_per_second` of iperf3's JSON; iperf3's own error when it has one.
    static func receivedBitsPerSecond(iperfJSON text: String) throws -> Double {
        let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        guard let end = object?["end"] as? [String: Any], let received = end["sum_received"] as? [String: Any],
              let bps = received["bits_per_second"] as? Double else {
            let reason = (object?["error"] as? String).map { ": iperf3 says \"\($0)\"" } ?? ""
            throw RuntimeError("iperf3's JSON has no end.sum_received.bits_per_second\(reason)")
        }
        return bps
    }

    // MARK: Ceiling

    static func ceiling(_ tools: Tools, _ settings: BenchSettings) async throws -> [BenchRow] {
        let seconds = settings.quick ? 3 : 5
        let session = try PacketBenchSession(link: PacketLinkConfiguration())
        let before = session.shell.path.counters
        let cpu = ProcessCPU()
        let started = monotonicSeconds()
        let measured = await Result { try await iperf(tools, session: session, arguments: ["-t", String(seconds)], timeout: Double(seconds) + 30) }
        let wall = monotonicSeconds() - started
        let spent = cpu.seconds()
        let after = session.close()
        var rows: [BenchRow] = []
        switch measured {
        case .success(let bps):
            let packets = Double(after.up.delivered + after.down.delivered - before.up.delivered - before.down.delivered)
            let bytes = Double(after.up.deliveredBytes + after.down.deliveredBytes - before.up.deliveredBytes - before.down.deliveredBytes)
            rows.append(.info("packet: unimpaired ceiling, iperf3 \(seconds) s (one stream)",
                              "\(Format.rate(bitsPerSecond: bps)); \(Format.count(Int(packets / wall))) packets/s through the path (both ways)"))
            rows.append(.info("packet: CPU per GB carried", "\(Format.fixed(spent / (bytes / 1e9), 2)) s of netsim's CPU per GB (\(Format.fixed(spent, 1)) s for \(Format.megabytes(bytes)))"))
        case .failure(let error):
            rows.append(.failed("packet: unimpaired ceiling", error))
        }
        // The relay, the same iperf3 on loopback through it.
        let label = "relay: unimpaired ceiling, iperf3 \(seconds) s (one stream)"
        do {
            let port = try freeLoopbackPort()
            let server = try ChildProcess(name: "iperf3 server", executable: tools.iperf3, arguments: ["-s", "-B", "127.0.0.1", "-p", String(port)], captureStandardError: false)
            defer { server.stop() }
            let (relay, relayPort) = try await RoundTripBench.startRelay(upstreamPort: port)
            let relayCPU = ProcessCPU()
            let measured = await Result {
                try await iperfClient(serverPort: port, host: "127.0.0.1") {
                    try capturedOutput(tools.iperf3, ["-c", "127.0.0.1", "-p", String(relayPort), "-t", String(seconds), "-J"], timeout: Double(seconds) + 30)
                }
            }
            let relaySpent = relayCPU.seconds()
            await relay.stop()
            let bps = try measured.get()
            let gigabytes = bps * Double(seconds) / 8e9
            rows.append(.info(label, Format.rate(bitsPerSecond: bps)))
            rows.append(.info("relay: CPU per GB carried", "\(Format.fixed(relaySpent / gigabytes, 2)) s of netsim's CPU per GB (\(Format.fixed(relaySpent, 1)) s)"))
        } catch {
            rows.append(.failed(label, error))
        }
        return rows
    }
}

/// This process's CPU time (user + system, every thread) since it was made.
struct ProcessCPU {
    private let start = ProcessCPU.now()

    func seconds() -> Double { ProcessCPU.now() - start }

    private static func now() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}
#endif
