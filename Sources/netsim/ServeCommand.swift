import ArgumentParser
import Foundation
import NetsimCore
import NetsimRelay
import NetsimService

/// `netsim serve`: the Toxiproxy-compatible control API.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve a Toxiproxy-compatible REST API: proxies are netsim relays, toxics are netsim models and faults.",
        discussion: """
            Examples:
              netsim serve
              netsim serve --port 0
              netsim serve --host 0.0.0.0 --token s3cret     (other machines must send Authorization: Bearer s3cret)
              netsim serve --events proxies.jsonl             (every proxy's connections, faults and closes)

            Existing Toxiproxy clients work unchanged (toxiproxy-python, toxiproxy-go, toxiproxy-ruby, ...).
            Prometheus metrics: GET /metrics. See docs/service.md.
            Stops on Ctrl-C (SIGINT), SIGTERM or SIGHUP, or after --duration.
            """
    )

    @Option(help: ArgumentHelp("Address to bind the API to. Loopback unless you say otherwise; any other address needs --token. Default: 127.0.0.1", valueName: "host"),
            transform: { Endpoint.canonicalIPv4($0) ?? $0 })  // 127.1 is 127.0.0.1, as --listen reads it (QA 50)
    var host = "127.0.0.1"

    @Option(help: ArgumentHelp("Port of the API (Toxiproxy's is 8474; 0 picks a free port). Default: 8474", valueName: "port"))
    var port = 8474

    @Option(help: ArgumentHelp("Require the header `Authorization: Bearer TOKEN` on every request. Required with a non-loopback --host.", valueName: "token"))
    var token: String?

    @Option(help: ArgumentHelp("Stop after this long instead of waiting for Ctrl-C. Example: 30s", valueName: "duration"), transform: parseRunDuration)
    var duration: Duration?

    @Option(help: ArgumentHelp("Seed for every random decision (which connections a toxic's toxicity picks, jitter, loss, slicer sizes). Same seed, same decisions. Example: --seed 42", valueName: "n"), transform: parseSeed)
    var seed: UInt64 = 1

    @Option(help: ArgumentHelp("Write every proxy's events as JSON lines to FILE, or to standard output with -, each with \"proxy\":NAME and its time from the start of netsim serve (written every second). Example: --events proxies.jsonl", valueName: "file|-"))
    var events: String?

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be from 0 to 65535") }
        try OutputFile.check(events, option: "--events")
        if !Self.isLoopback(host), (token ?? "").isEmpty {
            throw ValidationError("--host \(host) is not a loopback address: add --token TOKEN so only clients that know it can change the network")
        }
    }

    static func isLoopback(_ host: String) -> Bool { Endpoint(host: host, port: 0).isLoopback }

    @OptionGroup(title: "Diagnostics") var logging: LoggingOptions

    func run() async throws {
        logging.bootstrap()
        let stop = StopSignal(command: "netsim serve")
        // A port it cannot listen on is said before --events is truncated.
        do { try PortHold.probe(Endpoint(host: host, port: port)) } catch {
            throw RuntimeError("--host \(host) --port \(port): cannot listen on \(host):\(port): \(SocketFailureText.describe(error))")
        }
        let lines = try eventLines(to: events, stop: stop)
        let api = ToxiproxyAPI(access: APIAccess(token: token), eventLines: lines, seed: seed, warn: { message, exposes in
            if exposes { warnLoudly(message) } else { printStatus("note: \(message)", level: .warning) }
        })
        let server = APIServer(api: api)
        let bound: Endpoint
        do {
            bound = try await server.start(host: host, port: port)
        } catch {
            throw RuntimeError("--host \(host) --port \(port): cannot listen on \(host):\(port): \(SocketFailureText.describe(error))")
        }
        if !Self.isLoopback(host) {
            warnLoudly("""
                netsim serve listens on \(bound), which is NOT a loopback address: anyone who can reach it and knows \
                the token can create proxies on this machine and reach whatever it can reach.
                """)
        }
        printStatus("netsim serve: API on http://\(bound)\(token == nil ? "" : " (token required)")")
        if let events { printStatus("  events: \(events == "-" ? "standard output" : events)") }
        printStatus(seedAndStopLine(seed: seed, duration: duration))
        let flusher = lines.map { _ in flushPeriodically { await api.flushEvents() } }
        await stop.wait(duration: duration)
        flusher?.cancel()
        await server.stop()  // each proxy's relay stops, and its last events are written
        lines?.flush()
        printStatus("netsim serve: stopped")
    }
}
