import ArgumentParser
import Foundation
import NetsimCore
import NetsimLink
import NetsimRelay
import NetsimService
import NetsimTLS

/// `netsim proxy`: an HTTP forward proxy that impairs every connection it carries.
struct ProxyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "proxy",
        abstract: "An HTTP forward proxy (plain HTTP and CONNECT tunnels) that applies the link model and faults per connection.",
        discussion: """
            Examples:
              netsim proxy --listen 127.0.0.1:8080 --profile 3g
              curl -x http://127.0.0.1:8080 http://example.test/          (plain HTTP, absolute-form)
              curl -x http://127.0.0.1:8080 https://example.test/         (CONNECT tunnel: opaque unless --tls intercept)
              netsim proxy --tls intercept --profile 3g                    (CONNECT tunnels decrypted with netsim's CA: `netsim ca`)
              netsim proxy --listen 0.0.0.0:8080 --allow 192.168.1.0/24 --latency 200ms   (a phone on the LAN)
              netsim proxy --fault portal      (captive portal: HTTP gets a 302, TLS a reset)
              netsim proxy --fault outage=503  (plain HTTP gets 503 with Retry-After)

            Clients from loopback are always allowed; others only from an --allow network.
            Plain HTTP requests are forwarded with Connection: close (one request per connection).
            With --fault portal or outage nothing is resolved or connected while the fault answers.
            --dns-delay delays each lookup of a destination name; --dns-fail nxdomain|servfail
            answers 502, timeout answers 504 after 5 s (the proxy's resolver timeout).
            See docs/service.md. Stops on Ctrl-C (SIGINT), SIGTERM or SIGHUP, or after --duration.
            """
    )

    @Option(help: ArgumentHelp("Address to accept clients on. Loopback unless you say otherwise. Default: 127.0.0.1:8080", valueName: "host:port"), transform: parseEndpoint)
    var listen = Endpoint(host: "127.0.0.1", port: 8080)

    @Option(parsing: .upToNextOption, help: ArgumentHelp("Also accept clients from these networks (CIDR). Example: --allow 192.168.1.0/24 10.0.0.7", valueName: "cidr"),
            transform: { try AddressRange(parsing: $0) })
    var allow: [AddressRange] = []

    @OptionGroup(title: "Link model") var link: LinkOptions
    @OptionGroup(title: "Connection faults") var faults: FaultOptions
    @OptionGroup(title: "TLS (CONNECT tunnels)") var tlsOptions: TLSOptions
    /// `netsim relay`'s; parsed only to refuse it with the reason.
    @Option(name: .customLong("upstream-name"), help: .private) var upstreamName: String?
    @OptionGroup(title: "DNS (the proxy's own lookups of destination names)") var dns: DNSFaultOptions

    @Option(help: ArgumentHelp("Write every event as a JSON line to FILE, or to standard output with -. Example: --events run.jsonl", valueName: "file|-"))
    var events: String?

    @Option(help: ArgumentHelp("Seed for every random decision. Example: --seed 42", valueName: "n"), transform: parseSeed)
    var seed: UInt64 = 1

    @Option(help: ArgumentHelp("Stop after this long instead of waiting for Ctrl-C. Example: 30s", valueName: "duration"), transform: parseRunDuration)
    var duration: Duration?

    @Option(name: .customLong("connect-timeout"), help: ArgumentHelp("Give up on a destination that does not answer after this long: its connect (the client gets 504 Gateway Timeout) and, with --tls intercept, its TLS handshake (the client's connection is closed). Default: 60s (nginx's and Squid's). Example: 10s", valueName: "duration"), transform: parseDuration)
    var connectTimeout: Duration = .seconds(60)

    @Option(name: .customLong("max-connections"), help: ArgumentHelp("Hold at most this many client connections open; further clients wait in the listen queue until one ends. Default: as many as the open-file limit leaves room for (2 descriptors each). Example: --max-connections 500", valueName: "n"), transform: parseCount)
    var maxConnections: Int?

    func validate() throws {
        if upstreamName != nil {
            throw ValidationError("--upstream-name is for netsim relay: the proxy verifies each destination by the name the client asked for")
        }
        if let maxConnections, maxConnections < 1 {
            throw ValidationError("--max-connections \(maxConnections): give 1 or more")
        }
        try OutputFile.check(events, option: "--events")
        try checkConnectTimeout(connectTimeout, default: .seconds(60))
    }

    @OptionGroup(title: "Diagnostics") var logging: LoggingOptions

    func run() async throws {
        logging.bootstrap()
        let stop = StopSignal(command: "netsim proxy")
        // A taken port is found before --events is truncated (as netsim relay does).
        try ensureCanListen(listen)
        let log = try streamingEventLog(to: events, stop: stop)
        log.record(.seed(seed))
        let flusher = flushPeriodically(log)
        let intercepting = try tlsOptions.interception(keyLog: nil)
        if tlsOptions.upstreamInsecure {
            warnLoudly("--upstream-insecure: the proxy does not verify the certificates of the sites it reaches; anyone on the path can read and change the traffic.")
        }
        let interception = intercepting?.0
        let proxy = ForwardProxy(
            configuration: .init(listen: listen, link: link.configuration(), faults: faults.rules, seed: seed, allow: allow,
                                 interception: interception.map { shared in { @Sendable _ in shared } },
                                 dns: dns.faults(profile: link.profile), maximumConnections: maxConnections,
                                 authority: try tlsOptions.badCertAuthority(faults.rules, intercepting: intercepting?.1),
                                 connectTimeout: connectTimeout),
            eventLog: log)
        let bound: Endpoint
        do {
            bound = try await proxy.start()
        } catch {
            throw RuntimeError("--listen \(listen): cannot listen: \(SocketFailureText.describe(error))")
        }
        if !bound.isLoopback {  // once bound, naming the port that is open
            let who = allow.isEmpty ? "from loopback only (add --allow CIDR for others)"
                : "from loopback and " + allow.map(\.description).joined(separator: ", ")
            warnLoudly("""
                netsim proxy listens on \(bound), which is NOT a loopback address. Clients are accepted \(who); \
                they can reach anything this machine can reach.
                """)
        }
        printStatus("netsim proxy: http://\(bound)")
        printStatus("  link, each connection its own: \(proxy.configuration.link)")
        for rule in proxy.configuration.faults {
            printStatus("  fault: \(rule)")
            if let note = tlsOptions.http2Note(for: rule, command: "proxy") { printStatus("  note: \(note)", level: .warning) }
        }
        printConnectionLimit(proxy.connectionLimit, explicit: maxConnections)
        if !proxy.configuration.dns.isEmpty { printStatus("  dns: \(proxy.configuration.dns) for every destination name (not address literals)") }
        if let (_, authority) = intercepting {
            printStatus("  TLS: CONNECT tunnels intercepted; clients must trust \(authority.certificatePath?.path ?? "netsim's CA") (SHA-256 \(try authority.fingerprintSHA256))")
            if let note = authority.expiryNote() { printStatus("  note: \(note)", level: .warning) }
        }
        printStatus(seedAndStopLine(seed: seed, duration: duration))
        await stop.wait(duration: duration)
        flusher.cancel()
        await proxy.stop()
        log.flush()
        printStatus("netsim proxy: stopped")
    }
}
