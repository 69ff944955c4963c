import ArgumentParser
import Foundation
import NetsimCore

/// `netsim bench`: measures the relay on this machine and prints one table of results against targets.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure the relay on this machine.",
        discussion: """
            Everything runs on 127.0.0.1 in one run: throughput of one bulk stream (direct, through the \
            relay, through socat if installed), the round trip the relay adds, the accuracy of an injected \
            latency and of bandwidth caps, the relay's memory with many idle connections, the loss \
            model against the Mathis formula, and (Linux, root) netsim shell's packet path beside the \
            relay: delay, rate, kernel TCP under loss, ceiling, CPU per GB. With a toxiproxy-server \
            on PATH (or --toxiproxy), its throughput, round trip, latency and bandwidth toxics are \
            measured beside the relay's. Takes about 6 min, 10 with Toxiproxy (--quick: about 1 min 30 s).

            Build for release first, or the numbers mean little:
              swift build -c release --product netsim && .build/release/netsim bench

            Exits 0 when every part was measured (whether or not it met its target), 1 when a part failed.
            """)

    enum Part: String, ExpressibleByArgument, CaseIterable {
        case throughput, rtt, latency, bandwidth, rss, tls, model, packet
    }

    @Flag(help: "Shorter runs, for a smoke check.")
    var quick = false

    @Option(name: .customLong("only"), help: ArgumentHelp(
        "Run only this part (repeatable): \(Part.allCases.map(\.rawValue).joined(separator: ", ")).", valueName: "part"))
    var only: [Part] = []

    @Option(help: ArgumentHelp(
        "Idle connections for the rss part (capped by the open-file limit: the relay needs 2 per connection). Default: 10000",
        valueName: "n"))
    var connections = 10_000

    @Option(help: ArgumentHelp(
        "A toxiproxy-server binary to measure beside the relay (throughput, rtt, latency, bandwidth). "
            + "Default: toxiproxy-server on PATH, if there is one",
        valueName: "path"))
    var toxiproxy: String?

    func validate() throws {
        guard connections >= 1 else { throw ValidationError("--connections must be at least 1") }
        if let toxiproxy, access(toxiproxy, X_OK) != 0 {
            throw ValidationError("--toxiproxy \(toxiproxy): not an executable file")
        }
    }

    @OptionGroup(title: "Diagnostics") var logging: LoggingOptions

    func run() async throws {
        logging.bootstrap()
        let limits = OpenFileLimit.current  // raised at start (NetsimMain)
        let settings = BenchSettings(
            quick: quick, connections: connections, fileLimit: limits.hard,
            toxiproxy: ToxiproxyReference.executable(explicit: toxiproxy))
        let parts = only.isEmpty ? Part.allCases : Part.allCases.filter(only.contains)

        print("netsim bench\(quick ? " --quick" : ""): \(MachineDescription.buildKind)")
        print("machine: \(MachineDescription.summary); open files: soft \(limits.soft), hard \(limits.hard)")
        print("")

        var section = BenchSection()
        var failures = 0
        var model: (table: String, notes: [String])?
        // On a terminal the progress block says what is being measured; elsewhere, status lines.
        let progress = ProgressDisplay(title: "netsim bench", total: parts.count)
        for part in parts {
            if !progress.enabled { printStatus("netsim bench: measuring \(part.rawValue)…") }
            progress.started(part.rawValue)
            let failuresBefore = failures
            let started = monotonicSeconds()
            do {
                let result: BenchSection
                switch part {
                case .throughput: result = try await ThroughputBench.run(settings)
                case .rtt: result = try await RoundTripBench.runAddedRoundTrip(settings)
                case .latency: result = try await LatencyBench.run(settings)
                case .bandwidth: result = try await BandwidthBench.run(settings)
                case .rss: result = try await RSSBench.run(settings)
                case .tls: result = try await TLSBench.run(settings)
                case .model:
                    model = ModelBench.run(settings)
                    result = BenchSection()
                case .packet:
                    #if canImport(Glibc)
                    result = try await PacketBench.run(settings)
                    #else
                    result = BenchSection(notes: ["packet part not measured: netsim shell needs Linux"])
                    #endif
                }
                section.rows += result.rows
                section.notes += result.notes
                failures += result.rows.filter { $0.verdict == "NOT MEASURED" }.count
            } catch {
                section.rows.append(.failed(part.rawValue, error))
                failures += 1
            }
            let took = "netsim bench: \(part.rawValue) took \(Format.fixed(monotonicSeconds() - started, 1)) s"
            if progress.enabled { progress.emit(took) } else { printStatus(took) }
            progress.finished(part.rawValue, passed: failures == failuresBefore)
        }
        progress.stop()

        if !section.rows.isEmpty {
            print(renderTable(
                header: ["measurement", "result", "target", "verdict"],
                rows: section.rows.map { [$0.measurement, $0.result, $0.target, $0.verdict] }))
            print("")
            for note in section.notes { print("- " + note) }
        }
        if let model {
            if !section.rows.isEmpty { print("") }
            print("Loss model vs Mathis (bulk throughput of NetsimLink's loss model, no I/O):")
            print(model.table)
            print("")
            for note in model.notes { print("- " + note) }
        }
        if failures > 0 {
            throw RuntimeError("\(failures) measurement\(failures == 1 ? "" : "s") failed (see the table)")
        }
    }
}
