import ArgumentParser
import Foundation
import NetsimCore
import NetsimPcap
import NetsimRelay

/// `netsim replay`: the server side of a capture, served to real clients.
struct ReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Serve the server side of captured TCP conversations (HTTP matched by method and path).",
        discussion: """
            HTTP requests are matched by method and path: the n-th request for GET /x gets the \
            n-th captured answer to GET /x (starting over after the last), byte for byte. A request \
            the capture never saw gets a 404 from netsim. Flows that are not HTTP are replayed as \
            raw exchanges: each connection plays the next one, sending the server's bytes after the \
            client has sent as many bytes as it did in the capture. Where the server closed the \
            connection (FIN or RST), the replay does too.

            Timing: by default answers go out at once. --original-timing waits the server's \
            captured think time and paces the answer as captured (and replays idle closes after \
            their captured delay); --speed 2 does the same twice as fast.

            In scenarios: `upstream: { replay: FILE }`.

            Examples:
              netsim replay Fixtures/pcap/zeek-http-pipelined-requests.pcap --listen 127.0.0.1:8080
              netsim replay capture.pcap --flow 10.0.0.2:80 --original-timing
              netsim replay capture.pcap --list
            """)

    @Argument(help: ArgumentHelp("The capture file (pcap or pcapng).", valueName: "capture"))
    var capture: String

    @Option(help: ArgumentHelp("Address to serve on. Default: 127.0.0.1:0 (a free port).", valueName: "host:port"), transform: parseEndpoint)
    var listen = Endpoint(host: "127.0.0.1", port: 0)

    @OptionGroup var flows: FlowOption

    @Option(help: ArgumentHelp("Replay the server's timing this many times faster (0.5 = twice as slow). Example: --speed 2", valueName: "factor"))
    var speed: Double?

    @Flag(name: .customLong("original-timing"), help: "Replay the server's timing as captured (--speed 1).")
    var originalTiming = false

    @Flag(help: "List what would be served, then exit.")
    var list = false

    @Option(help: ArgumentHelp("Stop after this long instead of waiting for Ctrl-C. Example: 30s", valueName: "duration"), transform: parseRunDuration)
    var duration: Duration?

    func validate() throws {
        if speed != nil, originalTiming { throw ValidationError("give --speed or --original-timing, not both") }
        if let speed, !ReplayTiming.speeds.contains(speed) {
            throw ValidationError("--speed must be a factor from 0.001 to 1000, e.g. 2 or 0.5")
        }
    }

    func run() async throws {
        let plan: ReplayPlan
        do {
            let loaded = try Capture.load(path: capture)
            plan = try ReplayPlan(capture: loaded, flows: flows.selector)
        } catch let error as PcapError {
            throw RuntimeError(error.message)
        }
        for note in plan.notes { printStatus("note: \(note)") }
        if list {
            for line in plan.listing { print(line) }
            return
        }
        let stop = StopSignal(command: "netsim replay")
        let timing = ReplayTiming(speed: originalTiming ? 1 : speed)
        let server = ReplayServer(plan: plan, timing: timing, listen: listen)
        let bound: Endpoint
        do {
            bound = try await server.start()
        } catch {
            throw RuntimeError("--listen \(listen): cannot listen: \(SocketFailureText.describe(error))")
        }
        if !bound.isLoopback {
            warnLoudly("netsim replay listens on \(bound), which is NOT a loopback address: anyone who can reach this machine on that port can read the captured answers.")
        }
        printStatus("netsim replay: \(bound) serving \(counted(plan.exchanges.count, "HTTP exchange")) and \(counted(plan.raw.count, "raw flow")) from \(capture)")
        for line in plan.listing.prefix(20) { printStatus("  \(line)") }
        if plan.listing.count > 20 { printStatus("  … and \(plan.listing.count - 20) more (--list shows all)") }
        printStatus("  timing: \(timing.speed.map { $0 == 1 ? "as captured" : "\($0)× the captured speed" } ?? "immediate")\(duration.map { "; stopping after \($0.compactDescription)" } ?? "; Ctrl-C to stop")")
        await stop.wait(duration: duration)
        await server.stop()
        let served = server.requests
        printStatus("netsim replay: stopped after \(served.count) request\(served.count == 1 ? "" : "s") (\(served.filter { $0.flow == nil }.count) unmatched)")
    }
}
