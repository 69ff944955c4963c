import ArgumentParser
import Foundation
import NetsimCore
import NetsimLink
import NetsimPcap
import NetsimRelay
import NetsimService
import NetsimTLS

/// `netsim relay`: a long-running relay for manual testing.
struct RelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay",
        abstract: "Relay TCP from a local port to an upstream, impairing the link and injecting faults.",
        discussion: """
            Examples:
              netsim relay --listen 127.0.0.1:8081 --upstream 127.0.0.1:8080 --profile 3g
              netsim relay --upstream example.test:80 --latency 250ms --jitter 50ms --loss 2% --events -
              netsim relay --upstream 127.0.0.1:8080 --fault stale=rst --fault-at 10s --fault-target existing
              netsim relay --upstream 127.0.0.1:8080 --latency 100ms --metrics 127.0.0.1:9464   (Prometheus: GET /metrics)
              netsim relay --upstream api.example.test:443 --tls intercept --profile 3g --events -

            Durations: 30ms, 1.5s, 250us, 2m. Rates: 256kbit, 2mbit, 1gbit, 64kbps, 100KB/s.
            Percentages: 2%, 0.5%. Sizes: 1400, 64KB, 1MiB.
            Stops on Ctrl-C (SIGINT), SIGTERM or SIGHUP, or after --duration.
            """
    )

    @Option(help: ArgumentHelp("Address to accept clients on. Loopback unless you say otherwise; port 0 picks a free port. Default: 127.0.0.1:0", valueName: "host:port"), transform: parseEndpoint)
    var listen = Endpoint(host: "127.0.0.1", port: 0)

    @Option(help: ArgumentHelp("The server to relay to. Example: --upstream 127.0.0.1:8080", valueName: "host:port"), transform: parseEndpoint)
    var upstream: Endpoint

    @OptionGroup(title: "Link model") var link: LinkOptions
    @OptionGroup(title: "Connection faults") var faults: FaultOptions
    @OptionGroup(title: "TLS") var tlsOptions: TLSOptions
    @OptionGroup(title: "TLS") var upstreamName: UpstreamNameOption
    /// Parsed only to refuse them with the reason.
    @OptionGroup(visibility: .private) var packetOnly: PacketLinkOptions

    @Option(help: ArgumentHelp("Write every event as a JSON line to FILE, or to standard output with -. Example: --events run.jsonl", valueName: "file|-"))
    var events: String?

    @Option(help: ArgumentHelp("Record both legs of every connection to FILE (pcap, raw IPv4/IPv6; open in Wireshark); with --tls intercept the TLS secrets go to FILE's name with .keys. Example: --pcap relay.pcap", valueName: "file"))
    var pcap: String?

    @Option(help: ArgumentHelp("Serve Prometheus metrics (GET /metrics: bytes, connections, faults, added latency, connection duration) on this address. Loopback unless you say otherwise; port 0 picks a free port. Example: --metrics 127.0.0.1:9464", valueName: "host:port"), transform: parseEndpoint)
    var metrics: Endpoint?

    @Option(help: ArgumentHelp("Seed for every random decision (jitter, loss, fault probability). Same seed, same decisions. Example: --seed 42", valueName: "n"), transform: parseSeed)
    var seed: UInt64 = 1

    @Option(help: ArgumentHelp("Bytes one direction may hold back before the relay stops reading its source. Default: 4MiB. Example: --buffer 256KB", valueName: "bytes"), transform: parseBytes)
    var buffer = ByteCount(4 << 20)

    @Option(name: .customLong("connect-timeout"), help: ArgumentHelp("Give up connecting upstream after this long (the client then sees silence, as with a real timeout). Default: 127s. Example: 10s", valueName: "duration"), transform: parseDuration)
    var connectTimeout: Duration = .seconds(127)

    @Flag(help: ArgumentHelp("Forward connections that no model, fault, --pcap or interception touches with splice(2), without copying their bytes (Linux; opt-in). A connection switches to the copying path while anything applies, and back; each switch is a `path` event."))
    var splice = false

    @Option(name: .customLong("max-connections"), help: ArgumentHelp("Hold at most this many connections open; further clients wait in the listen queue until one ends. Default: as many as the open-file limit leaves room for (2 descriptors each). Example: --max-connections 500", valueName: "n"), transform: parseCount)
    var maxConnections: Int?

    @Option(help: ArgumentHelp("Stop after this long instead of waiting for Ctrl-C. Example: 30s", valueName: "duration"), transform: parseRunDuration)
    var duration: Duration?

    @OptionGroup(title: "Diagnostics") var logging: LoggingOptions

    func validate() throws {
        try packetOnly.refuse(in: "netsim relay")
        try upstreamName.check(with: tlsOptions)
        if upstream.port == 0 { throw ValidationError("--upstream \(upstream): give the server's port (1-65535); port 0 is no server's") }
        if Self.isItself(upstream, bound: listen) {
            throw ValidationError("--upstream \(upstream) is --listen \(listen), the relay itself: each connection would open another through it until the descriptors run out; give the server's address")
        }
        try OutputFile.check(events, option: "--events")
        try OutputFile.check(pcap, option: "--pcap")
        // `--pcap -` is the capture on standard output (`| tshark -r -`), alone there (QA 63: it
        // was mixed with `--events -`, and the TLS secrets went to a file named `-.keys`).
        // By any name: `/dev/stdout`, `/dev/fd/1`, or the file standard output is redirected to
        // (QA 67: `--events /dev/stdout --pcap -` passed, and the JSON lines broke the capture).
        if let events, let pcap, OutputFile.isStandardOutput(pcap), OutputFile.isStandardOutput(events) {
            throw ValidationError("--pcap \(pcap) and --events \(events) would both write to standard output; give one of them a file name")
        }
        if pcap == "-", tlsOptions.tls == .intercept {
            throw ValidationError("--pcap - with --tls intercept: the TLS secrets are written beside the capture (FILE.keys), which standard output has no name for; give --pcap a file name")
        }
        // One file for two outputs kept one of them (QA 37: the events, or the TLS secrets).
        let secrets = tlsOptions.tls == .intercept ? pcap.map { KeyLogFile.url(besidePcap: $0).path } : nil
        try OutputFile.checkDistinct([("--events", events), ("--pcap", pcap), ("the TLS secrets beside --pcap", secrets)], inputs: [])
        try checkConnectTimeout(connectTimeout, default: .seconds(127))
        if buffer.bytes < 1 {
            throw ValidationError("--buffer \(buffer.bytes): give 1 byte or more (a direction that may hold nothing never reads); the default is 4MiB")
        }
        if let maxConnections, maxConnections < 1 {
            throw ValidationError("--max-connections \(maxConnections): give 1 or more")
        }
    }

    func run() async throws {
        logging.bootstrap()
        let stop = StopSignal(command: "netsim relay")
        // What would stop the relay is found before --events and --pcap are truncated: a failed
        // start left the user's earlier files empty. The relay connects to the address resolved here.
        let connector: AddressConnector
        do { connector = try AddressConnector(resolving: upstream) } catch {
            throw RuntimeError("--upstream \(upstream): \(SocketFailureText.describe(error))")
        }
        try ensureCanListen(listen)
        let log = try streamingEventLog(to: events, stop: stop)
        log.record(.seed(seed))
        let flusher = flushPeriodically(log)

        var exporter: MetricsListener?
        if let metrics { exporter = try await MetricsListener.start(at: metrics, log: log) }
        var keyLog: KeyLogFile?
        if tlsOptions.tls == .intercept, let pcap {
            do { keyLog = try KeyLogFile(url: KeyLogFile.url(besidePcap: pcap)) } catch { throw ValidationError("\(error)") }
        }
        let interception = try tlsOptions.interception(keyLog: keyLog, upstreamName: upstreamName.upstreamName)
        if tlsOptions.upstreamInsecure {
            warnLoudly("--upstream-insecure: the relay does not verify \(upstream)'s certificate; anyone on the path to it can read and change the traffic.")
        }
        let configuration = RelayConfiguration(
            listen: listen, upstream: upstream, link: link.configuration(), faults: faults.rules,
            seed: seed, connectTimeout: connectTimeout, bufferLimit: buffer.bytes,
            observeHTTP: interception != nil, tls: interception?.0,   // intercepting is for seeing the HTTP inside
            authority: try tlsOptions.badCertAuthority(faults.rules, intercepting: interception?.1),
            delays: exporter?.metrics, splice: splice, maximumConnections: maxConnections)
        let recorder: PcapRecorder?
        do { recorder = try pcap.map(PcapRecorder.init(path:)) } catch {
            throw ValidationError("cannot record to \(pcap ?? ""): \(error)")
        }
        let relay = Relay(configuration: configuration, eventLog: log, tap: recorder, connector: connector)
        let bound: Endpoint
        do {
            bound = try await relay.start()
        } catch {
            throw RuntimeError("--listen \(listen): cannot listen: \(SocketFailureText.describe(error))")
        }
        if Self.isItself(upstream, bound: bound) {
            await relay.stop()
            throw RuntimeError("--upstream \(upstream) is this relay's own listener (\(bound)): each connection would open another through it until the descriptors run out; give the server's address")
        }
        // Once bound, so it names the port that is open (`--listen 0.0.0.0:0` said `:0`).
        if let warning = Self.exposureWarning(listen: bound, upstream: upstream) { warnLoudly(warning) }
        printStatus("netsim relay: \(bound) → \(upstream)")
        printStatus("  link, each connection its own: \(configuration.link)")
        if let profile = link.profile, profile.dnsDelay != nil {
            printStatus("  note: --profile \(profile.name) delays DNS answers; the relay resolves nothing for its clients (use netsim proxy or netsim shell)")
        }
        for rule in configuration.faults {
            printStatus("  fault: \(rule)")
            if let note = tlsOptions.http2Note(for: rule, command: "relay") { printStatus("  note: \(note)", level: .warning) }
        }
        printConnectionLimit(relay.connectionLimit, explicit: maxConnections, splice: splice)
        // QA 63: said nothing, though no connection could ever take the splice path.
        if splice, let always = [(configuration.link.isImpaired, "the link model"), (pcap != nil, "--pcap"), (interception != nil, "--tls intercept")]
            .first(where: \.0)?.1 {
            printStatus("  note: --splice: \(always) touches every connection, so none takes the splice path, while the connection limit still counts its pipes' descriptors", level: .warning)
        }
        if let recorder { printStatus("  recording: \(recorder.path)\(keyLog.map { " (TLS secrets: \($0.url.path))" } ?? "")") }
        if let exporter { printStatus("  metrics: http://\(exporter.address)/metrics") }
        if let (_, authority) = interception {
            printStatus("  TLS: intercepting; clients must trust \(authority.certificatePath?.path ?? "netsim's CA") (SHA-256 \(try authority.fingerprintSHA256))")
            if let note = authority.expiryNote() { printStatus("  note: \(note)", level: .warning) }
        }
        printStatus(seedAndStopLine(seed: seed, duration: duration))

        await stop.wait(duration: duration)
        flusher.cancel()
        await relay.stop()
        await exporter?.stop()
        recorder?.close()
        keyLog?.close()
        log.flush()
        printStatus("netsim relay: stopped")
    }

    /// Whether `upstream` is the relay's own listener at `bound`: the same port and address
    /// (localhost being 127.0.0.1 or ::1), or a loopback address for a wildcard listener. QA 63:
    /// `--upstream` repeating `--listen`'s port, a one-character typo, relayed each connection
    /// into a new one until the connection limit or the descriptors ran out.
    static func isItself(_ upstream: Endpoint, bound: Endpoint) -> Bool {
        guard upstream.port == bound.port else { return false }
        let (to, at) = (upstream.host.lowercased(), bound.host.lowercased())
        if to == at { return true }
        if to == "localhost", ["127.0.0.1", "::1"].contains(at) { return true }
        return bound.isWildcard && upstream.isLoopback
    }

    /// The warning for a listener other machines can reach; nil on loopback.
    static func exposureWarning(listen: Endpoint, upstream: Endpoint) -> String? {
        guard !listen.isLoopback else { return nil }
        return """
            netsim relay listens on \(listen), which is NOT a loopback address: anyone who can reach this \
            machine on that port can use the relay to reach \(upstream).
            """
    }
}
