import ArgumentParser
import Foundation
import NetsimCore
import NetsimRunner
import NetsimScenario

/// `netsim run`: one scenario, with a live view and a verdict per expectation.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a scenario against its client and judge the recovery it shows.",
        discussion: """
            Exit status: 0 when every expectation holds, 1 when one fails (or the harness could \
            not run), 2 when the scenario is missing or invalid, 64 when the command line is \
            wrong (nothing runs then), 130/143/129 when interrupted by SIGINT/SIGTERM/SIGHUP.

            Example:
              netsim run Scenarios/lockscreen.scn
              netsim run Scenarios/lockscreen.scn --seed 7 --events run.jsonl --json run.json
              netsim run Scenarios/lockscreen.scn --html run.html
            """)

    @Argument(help: ArgumentHelp("The scenario file (.scn). Paths are matched case-insensitively: scenarios/lockscreen.scn works.", valueName: "file"))
    var file: String

    @OptionGroup var options: RunnerOptions

    @Option(help: ArgumentHelp("Write the run's event timeline as JSON lines to FILE. Example: --events run.jsonl", valueName: "file"))
    var events: String?

    @Option(help: ArgumentHelp("Write the run (requests, checks, server requests) as JSON to FILE. Example: --json run.json", valueName: "file"))
    var json: String?

    @Option(help: ArgumentHelp("Write the run as one self-contained HTML page to FILE: verdicts, checks, a zoomable timeline with one swimlane per connection. With several drivers, every run and the client × scenario table. Example: --html run.html", valueName: "file"))
    var html: String?

    @Option(help: ArgumentHelp("Record both legs of every relayed connection to FILE (pcap; open in Wireshark). Example: --pcap run.pcap", valueName: "file"))
    var pcap: String?

    @OptionGroup(title: "Diagnostics") var logging: LoggingOptions

    func validate() throws {
        // Distinct first: the writability probe opens each path for writing, which a report named
        // over the scenario must never do (QA 60: it opened the scenario, and probed its folder).
        try OutputFile.checkDistinct([("--events", events), ("--json", json), ("--html", html), ("--pcap", pcap)],
                                     inputs: [file, ScenarioFiles.resolve(file)])
        for (path, option) in [(events, "--events"), (json, "--json"), (html, "--html"), (pcap, "--pcap")] {
            try OutputFile.check(path, option: option, standardOutputHolds: "the run's report")
        }
        // Here, not in run(): a ValidationError thrown there printed the root command's usage.
        if options.drivers.count > 1, events != nil || json != nil || pcap != nil {
            throw ValidationError("--events, --json and --pcap write one run; with several clients (--client \(options.client ?? "all")) use netsim test (--json, --pcap DIR)")
        }
    }

    func run() async throws {
        logging.bootstrap()
        Interruption.install(for: "run")
        let scenario = try ScenarioLoading.load(ScenarioFiles.resolve(file))
        // Once the scenario is known to run: an interrupted run leaves no report, never the last one's.
        OutputFile.removeEarlierReports([events, json, html])
        let drivers = options.drivers
        var failed: [String] = []
        var results: [RunResult] = []
        for driver in drivers {
            let result = try await runOnce(scenario, client: driver)
            results.append(result)
            if !result.passed { failed.append(result.driverName) }
        }
        if let html { try writeHTML(results, columns: drivers.map(\.column), to: html) }
        if drivers.count > 1 {
            print("\(drivers.count - failed.count) passed, \(failed.count) failed" + (failed.isEmpty ? "" : " (\(failed.joined(separator: "; ")))"))
        }
        if !failed.isEmpty { throw ExitCode(1) }
    }

    /// `--html`: one run as its page; several drivers as a suite with its one-row matrix, whose
    /// columns are named as `netsim test`'s are (the driver asked for).
    private func writeHTML(_ results: [RunResult], columns: [String], to path: String) throws {
        let page: String
        if results.count == 1 {
            page = HTMLReport.render(results[0])
        } else {
            var measurement = MatrixMeasurement()
            let entries = zip(results, columns).map { result, column in
                measurement.add(scenario: result.scenario.name, driver: column, MatrixOutcome(result))
                return HTMLReport.Entry(.run(result), cell: HTMLReport.MatrixPlace(scenario: result.scenario.name, driver: column))
            }
            page = HTMLReport.render(entries, matrix: measurement, title: "\(results[0].scenario.name) · \(results.count) drivers")
        }
        try writeOrFail(page, to: path, option: "--html")
    }

    /// One run with one driver: live view, verdicts, the files asked for.
    private func runOnce(_ scenario: Scenario, client: ClientChoice) async throws -> RunResult {
        let view = LiveView()
        let result: RunResult
        do {
            var runOptions = options.runOptions(client, observer: view)
            runOptions.pcapPath = pcap
            if let events { runOptions.eventLog = Self.eventsWhenInterrupted(to: events) }
            result = try await ScenarioRunner.run(scenario, options: runOptions)
        } catch let error as RunnerError {
            view.finish()
            throw ScenarioLoading.exit(for: error)
        }
        // A run the interruption's cleanup ended (its client killed) has no report to print or
        // write: the handler's line says so, and its exit ends the process (QA 46: the verdicts
        // of the killed run came out first, now and then).
        Interruption.yieldToHandler()
        view.finish()
        print("")
        print(TextReport.render(result, color: isatty(STDOUT_FILENO) == 1))
        print("")
        if let events { try writeOrFail(Self.jsonLines(result.events), to: events, option: "--events") }
        if let json { try writeOrFail(JSONReport.data(JSONReport.Run(result)), to: json, option: "--json") }
        return result
    }

    /// The log of the run about to start: if the run is interrupted, the events it recorded so
    /// far are written to `path`, ending with a `step` that says so. A run stopped because it
    /// hung is the one whose timeline a user wants (QA 66: nothing was written).
    private static func eventsWhenInterrupted(to path: String) -> EventLog {
        let log = EventLog()
        Interruption.reportWhenInterrupted { signal in
            log.record(.step(description: "interrupted by \(signal): the run did not finish"))
            do { try writeOrFail(jsonLines(log.events), to: path, option: "--events") } catch { return "the events so far were not written: \(error)" }
            return "the events so far written to \(path)"
        }
        return log
    }

    private static func jsonLines(_ events: [Event]) -> String {
        events.map(\.jsonLine).joined(separator: "\n") + "\n"
    }
}

/// Options `run` and `test` share.
struct RunnerOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Run with this client driver instead of the scenario's: exec (the scenario's exec client, the --exec one, or the reference urllib3 client), urlsession, async-http-client, naive, resilient, node-fetch (Node's fetch, Fixtures/clients/node_fetch_client.mjs), httpx, requests, aiohttp, curl (pycurl), go (net/http), okhttp, urllib3 (the reference client by name, not a column of all: exec runs it) (the libraries' clients in Fixtures/clients/, docs/clients.md), or your own exec client as exec:NAME=COMMAND — several, comma-separated (naive,resilient), or all, each in turn. Example: --client all,exec:my-fetch='node fetch.mjs'", valueName: "driver"))
    var client: String?

    @Option(help: ArgumentHelp("Run every scenario with your own exec client (docs/drivers.md), whatever driver the scenario names; the scenario's timeout, pool, retries and settings reach it in config. With --client, it is the exec column's client. Example: --exec 'node fetch.mjs'", valueName: "command"))
    var exec: String?

    @Option(help: ArgumentHelp("The --exec (and exec:NAME=) client's working directory, where relative paths in its command are found. Default: the current directory", valueName: "dir"))
    var execDir: String?

    @Option(help: ArgumentHelp("Seed for every random decision, instead of the scenario's. Example: --seed 7", valueName: "n"), transform: parseSeed)
    var seed: UInt64?

    func validate() throws {
        _ = try ClientChoice.parse(client: client, exec: exec, execDirectory: execDir)
    }

    /// The clients to run with, in order (validated already).
    var drivers: [ClientChoice] {
        (try? ClientChoice.parse(client: client, exec: exec, execDirectory: execDir)) ?? [ClientChoice()]
    }

    /// The client options as they would be typed again (a command to regenerate a matrix):
    /// `--client …`, `--exec …`, `--exec-dir …`, as words (``ShellQuoting`` quotes them).
    var commandLine: [String] {
        [("--client", client), ("--exec", exec), ("--exec-dir", execDir)].flatMap { flag, value in
            value.map { [flag, $0] } ?? []
        }
    }

    func runOptions(_ choice: ClientChoice, observer: (any RunObserver)? = nil) -> RunOptions {
        RunOptions(driver: choice.driver, seed: seed, observer: observer, exec: choice.exec)
    }
}

/// Loading scenarios with diagnostics, and the exit codes the commands share.
enum ScenarioLoading {
    /// Parses and validates; on errors prints them all (file:line:col, the line, a caret, a hint)
    /// and exits with status 2.
    static func load(_ path: String) throws -> Scenario {
        do {
            return try ScenarioParser.parseToRun(file: path)
        } catch {
            StandardStream.error.write(rendered(error) + "\n")
            throw ExitCode(2)
        }
    }

    /// A parse failure as people read it. (A `catch … as ScenarioErrors` pattern on the parser's
    /// typed throws crashes Swift 6.3's compiler, hence the cast on the value.)
    static func rendered(_ error: any Error) -> String {
        (error as? ScenarioErrors)?.rendered() ?? "\(error)"
    }

    static func exit(for error: RunnerError) -> ExitCode {
        StandardStream.error.write("netsim: \(error)\n")
        switch error {
        case .invalid: return ExitCode(2)
        case .failed: return ExitCode(1)
        }
    }
}

func writeOrFail(_ text: String, to path: String, option: String? = nil) throws {
    try writeOrFail(Data(text.utf8), to: path, option: option)
}

/// Writes a report whole or not at all: a new or regular file through a temporary one and a
/// rename, so a reader never sees half of it. The rename replaces whatever the path names, so
/// anything else is written in place: a symlink (the link stays; `/dev/stdout` is one, and
/// renaming over it as root replaced it with a file) and a device or FIFO (a shell's `>(jq .)`).
/// netsim's own standard output or error, whatever the path, is written through it: opened
/// again, a regular file that stdout was redirected to was written from its start, over the
/// report (``StandardStream/same(as:)``). A failure names `option` when given (QA 67: `cannot
/// write /dev/full` after a run's verdict did not say which of its reports was lost).
func writeOrFail(_ data: Data, to path: String, option: String? = nil) throws {
    if let stream = StandardStream.same(as: path) {
        // After what `print` holds (netsim test's header is still in its buffer), and ending
        // its line, so what follows starts on its own (QA 46: `}0 passed, 1 failed`).
        fflush(nil)
        var bytes = Array(data)
        if bytes.last != 0x0A { bytes.append(0x0A) }
        return stream.write(bytes: bytes)
    }
    do {
        var status = stat()
        if lstat(path, &status) == 0, status.st_mode & S_IFMT != S_IFREG {
            // O_CREAT: a dangling symlink gets its target made, as a shell's redirection does.
            let descriptor = open(path, O_WRONLY | O_TRUNC | O_CREAT | O_CLOEXEC, 0o644)
            if descriptor < 0 { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
            try handle.write(contentsOf: data)
        } else {
            try data.write(to: URL(fileURLWithPath: path), options: .atomic)
        }
    } catch {
        throw RuntimeError(option.map { "\($0) \(path): cannot write it: \(error.posixReason)" } ?? "cannot write \(path): \(error.posixReason)")
    }
}
