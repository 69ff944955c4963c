import Logging
import Foundation
import NetsimCore
import NetsimHTTP
import NetsimLink
import NetsimPcap
#if canImport(Glibc)
import NetsimPacket
#endif
import NetsimRelay
import NetsimScenario
import NetsimTLS

/// How a run is set up beyond what the scenario says.
public struct RunOptions: Sendable {
    /// `--client`: run with this driver instead of the scenario's.
    public var driver: String?
    /// `--seed`: overrides the scenario's seed.
    public var seed: UInt64?

    /// The seed a run of `scenario` uses: ``seed``, else the scenario's own.
    public func seed(for scenario: Scenario) -> UInt64 { seed ?? scenario.seed }
    /// Where relative paths in an exec command are looked up first (the current directory).
    public var workingDirectory: String
    /// Told about steps and outcomes as they happen (the live view).
    public var observer: (any RunObserver)?
    /// `--pcap`: record both legs of every relayed connection to this pcap file (and, over TLS,
    /// the session secrets beside it: `run.keys`).
    public var pcapPath: String?
    /// Where netsim's CA lives (`$NETSIM_HOME`, default `~/.netsim`): used when a scenario speaks TLS.
    public var netsimHome: NetsimHome
    /// `--exec`/`--exec-dir`, or a matrix column `exec:NAME=COMMAND`: the exec driver runs this
    /// command instead of the scenario's (or the reference client), and with no `driver` given
    /// the run uses the exec driver whatever the scenario names.
    public var exec: ExecClient?
    /// The caller's own client, in this process (NetsimTesting): with no `driver` given the
    /// run drives it whatever the scenario names.
    public var inProcess: InProcessClient?
    /// The log the run records its events into, new for each run by default. A caller that
    /// keeps it reads what happened so far while the run goes: an interrupted `netsim run`
    /// writes those events to its `--events` file. One log per run.
    public var eventLog: EventLog?

    public init(
        driver: String? = nil, seed: UInt64? = nil, workingDirectory: String = FileManager.default.currentDirectoryPath,
        observer: (any RunObserver)? = nil, pcapPath: String? = nil, netsimHome: NetsimHome = .fromEnvironment(),
        exec: ExecClient? = nil, inProcess: InProcessClient? = nil
    ) {
        self.exec = exec
        self.inProcess = inProcess
        self.driver = driver
        self.seed = seed
        self.workingDirectory = workingDirectory
        self.observer = observer
        self.pcapPath = pcapPath
        self.netsimHome = netsimHome
    }

    /// The driver a run of `scenario` uses: `driver`, else the in-process client's name, else
    /// `exec` when an exec client was given, else the scenario's own.
    public func driverName(for scenario: Scenario) -> String {
        driver ?? inProcess?.name ?? (exec != nil ? "exec" : scenario.client.driver)
    }

    /// Refuses a run whose built-in driver could not read the scenario's `settings`: the scenario
    /// check only reads them for the driver the scenario names, so `--client resilient` over a
    /// scenario written for `exec` would run with a misread `backoff` silently at its default.
    func checkSettings(for scenario: Scenario) throws {
        let name = driverName(for: scenario)
        guard name != scenario.client.driver, DriverFactory.inProcess.contains(name) else { return }
        let problems = scenario.client.unreadableBuiltinSettings()
        guard !problems.isEmpty else { return }
        throw RunnerError.invalid("\(scenario.client.location): the \(name) driver (--client \(name)) cannot read these settings: "
            + problems.joined(separator: "; ") + " (docs/drivers.md lists what it reads)")
    }

    /// The client for one run: the in-process one unless a driver is named, else the named one;
    /// inside a packet link's namespace when `placement` says so.
    func makeDriver(for scenario: Scenario, caFile: String?, placement: ClientPlacement? = nil) async throws -> any ClientDriver {
        if driver == nil, let inProcess {
            if placement != nil {
                throw RunnerError.invalid("\(scenario.file): link mode packet runs the client inside a network namespace, as a process; "
                    + "a client in the test's own process cannot go there: run the scenario in relay mode, or give an exec client")
            }
            return try await inProcess.make(DriverConfig(scenario.client, seed: seed(for: scenario), caFile: caFile))
        }
        return try DriverFactory.make(driverName(for: scenario), scenario: scenario, options: self, caFile: caFile, placement: placement)
    }
}

/// Hears about a run as it happens.
public protocol RunObserver: Sendable {
    /// `relay`: where the client connects — the relay's listener, or on a packet link the
    /// upstream at NETSIM_HOST.
    func started(_ scenario: Scenario, driver: String, relay: Endpoint, seed: UInt64)
    func stepFired(_ step: TimelineStep, at nanoseconds: Int64, description: String)
    /// A request was handed to the client (a step's `count` start one by one: `parallel` at a
    /// time, or on `every`'s timer).
    func requestStarted(name: String, index: Int)
    func requestFinished(_ outcome: RequestOutcome)
}

extension RunObserver {
    public func requestStarted(name: String, index: Int) {}
}

/// Runs scenarios: starts the upstream, the relay (or a packet link) and the client, plays the
/// timeline, then judges the expectations.
public enum ScenarioRunner {
    /// How long a run's end waits for its connections to close by themselves once the client
    /// has shut down: the closes cross the link both ways (two round trips, with the jitter and
    /// the queues of a slow link) and the server answers, at most 2 s. A connection still open
    /// then (a fault holds its FIN) is closed by the relay's stop.
    static func drainTime(_ link: LinkConfiguration) -> Duration {
        .nanoseconds(min(2_000_000_000, Int64(250_000_000).addingSaturating(link.roundTripNanoseconds.addingSaturating(link.roundTripNanoseconds))))
    }

    /// Why `scenario` cannot run on this machine (link mode packet without Linux, root or
    /// /dev/net/tun); nil when it can.
    public static func cannotRun(_ scenario: Scenario) -> String? {
        guard scenario.linkMode == .packet else { return nil }
        #if canImport(Glibc)
        return PacketShellRequirements.missing().map { "link mode packet \($0)" }
        #else
        return "link mode packet needs Linux (network namespaces and TUN devices)"
        #endif
    }

    /// Diagnostics (`netsim --log-level debug`): each run's parts starting and its verdict.
    static let logger = Logger(label: "netsim.runner")

    public static func run(_ scenario: Scenario, options: RunOptions = RunOptions()) async throws -> RunResult {
        var logger = Self.logger
        logger[metadataKey: "scenario"] = "\(scenario.name)"
        logger[metadataKey: "driver"] = "\(options.driverName(for: scenario))"
        try options.checkSettings(for: scenario)
        let log = options.eventLog ?? EventLog()
        log.record(.seed(options.seed(for: scenario)))
        // Counted in the line an interrupted command prints (nothing to undo: the process exits).
        let inFlight = InterruptCleanup.register(.run) {}
        defer { InterruptCleanup.unregister(inFlight) }
        // Every part is registered as it starts; whatever fails unwinds exactly what started.
        let started = StartedParts()
        do {
            let tls = try RunTLS.prepare(for: scenario, options: options)
            started.push { tls?.keyLog?.close() }
            // A packet link first: the upstream listens on its host side.
            let packet = try PacketStage.start(scenario, seed: options.seed(for: scenario), log: log, pcapPath: options.pcapPath)
            started.push { packet?.stop() }
            let upstream = try await UpstreamHandle.start(scenario.upstream, log: log, tls: tls, scenarioFile: scenario.file,
                                                          workingDirectory: options.workingDirectory, host: packet?.host ?? "127.0.0.1")
            started.push { await upstream.stop() }
            let recorder: PcapRecorder?
            do { recorder = packet != nil ? nil : try options.pcapPath.map(PcapRecorder.init(path:)) } catch {
                throw RunnerError.invalid("cannot record the run: \(error)")
            }
            let closeOnInterrupt = recorder.map { recorder in InterruptCleanup.register(.capture) { recorder.close() } }
            started.push {
                recorder?.close()
                closeOnInterrupt.map(InterruptCleanup.unregister)
            }
            let link: any RunLink
            let target: Endpoint
            if let packet {
                link = packet.link
                target = Endpoint(host: packet.host, port: upstream.endpoint.port)
                started.push {}
            } else {
                let relay = Relay(
                    configuration: RelayConfiguration(
                        upstream: upstream.endpoint, link: scenario.link, seed: options.seed(for: scenario),
                        connectTimeout: scenario.client.connectTimeout.map { $0 * 2 } ?? .seconds(30),
                        observeHTTP: true, tls: try tls?.interception(for: scenario), authority: tls?.authority),
                    eventLog: log, tap: recorder, connector: upstream.connector)
                do { target = try await relay.start() } catch {
                    throw RunnerError.failed("cannot start the relay: \(error)")
                }
                // Interrupted, the relay stops before the capture closes (newer, it is undone
                // first): the connections open at the signal end in the event log and the
                // capture (QA 67: neither had their ends). Given 2 s.
                let stopOnInterrupt = InterruptCleanup.register(.relay) {
                    let stopped = DispatchSemaphore(value: 0)
                    Task {
                        await relay.stop()
                        stopped.signal()
                    }
                    _ = stopped.wait(timeout: .now() + 2)
                }
                started.push {
                    InterruptCleanup.unregister(stopOnInterrupt)
                    // The client has shut down (its driver stops first): its closes are on the
                    // link still, and the server's answering FINs behind them. Stopped at once,
                    // the relay closed those connections itself, and every capture ended them
                    // half-closed, the server's FIN missing (QA 54).
                    _ = await relay.connectionsClosed(within: Self.drainTime(relay.link))
                    await relay.stop()
                }
                // The built-in server's idle time starts when it would have accepted on the link.
                upstream.allowForHandshake { .nanoseconds(relay.link.handshakeNanoseconds) }
                link = relay
            }
            let authority = packet?.authority(port: upstream.endpoint.port) ?? target.description
            logger.debug("link and upstream up", metadata: ["mode": "\(scenario.linkMode)", "target": "\(authority)", "upstream": "\(upstream.endpoint)"])
            let driver = try await options.makeDriver(for: scenario, caFile: tls?.caFile, placement: packet?.placement)
            started.push { await driver.shutdown() }
            try await driver.ready(timeout: .seconds(20))
            logger.debug("client ready", metadata: ["client": "\(driver.name)"])

            // Scenario time starts now that the server, the relay and the client are all up.
            log.rebase(toMonotonic: log.clock.now())
            options.observer?.started(scenario, driver: driver.name, relay: target, seed: options.seed(for: scenario))
            let timeline = TimelinePlayer(scenario: scenario, link: link, authority: authority, driver: driver, log: log, observer: options.observer)
            let outcomes = await timeline.play()
            let finished = log.clock.now() - log.origin
            // Stop in reverse order, reading what each part knows before the next one goes:
            // the client's log once it has shut down, the server's requests before it stops.
            await started.stopLast()  // the driver
            let clientLog = await driver.log
            let clientEnd = await driver.endProblem
            await started.stopLast()  // the relay (its last `closed` events)
            await started.stopLast()  // the recorder
            let serverRequests = await upstream.requests()
            // On a packet link the server's peers are the clients themselves (no relay, no NAT).
            let peers = packet != nil ? upstream.peers(of: serverRequests) : [:]
            await started.stopLast()  // the upstream
            await started.stopLast()  // the packet link
            await started.stopLast()  // the key log
            var result = judge(scenario, log: log, outcomes: outcomes, serverRequests: serverRequests, peers: peers,
                               driverName: driver.name, duration: finished, clientLog: clientLog, seed: options.seed(for: scenario))
            result.verdicts += [ExpectationJudge.clientAnswers(result.outcomes, of: scenario),
                                ExpectationJudge.clientEnd(clientEnd, of: scenario)].compactMap { $0 }
            logger.debug("judged", metadata: ["passed": "\(result.passed)", "seconds": "\(Double(finished) / 1e9)"])
            return result
        } catch {
            logger.debug("run failed, stopping what started", metadata: ["error": "\(error)"])
            await started.stopAll()
            throw error
        }
    }

    private static func judge(_ scenario: Scenario, log: EventLog, outcomes: [RequestOutcome], serverRequests: [ServerRequest],
                              peers: [Int: Endpoint], driverName: String, duration finished: Int64, clientLog: String,
                              seed: UInt64) -> RunResult {
        let events = log.events
        let mapped = ConnectionMap(events: events, serverRequests: serverRequests, peers: peers).attach(to: outcomes)
        let observations = Observations(outcomes: mapped, serverRequests: serverRequests, events: events, ended: finished)
        let verdicts = ExpectationJudge(observations: observations).judge(scenario.expectations)
        return RunResult(
            scenario: scenario, driverName: driverName, outcomes: mapped, serverRequests: serverRequests,
            events: events, verdicts: verdicts, duration: finished, clientLog: clientLog, seed: seed)
    }
}

/// What a run has started, newest last, each with how to stop it: one place that knows the
/// order of tear-down, for the normal end and for every failure on the way up.
final class StartedParts: @unchecked Sendable {
    // `@unchecked Sendable`: used by one run's task only, in order.
    private var stops: [@Sendable () async -> Void] = []

    func push(_ stop: @escaping @Sendable () async -> Void) { stops.append(stop) }

    /// Stops the most recently started part.
    func stopLast() async {
        guard let stop = stops.popLast() else { return }
        await stop()
    }

    /// Stops everything still running, newest first.
    func stopAll() async {
        while !stops.isEmpty { await stopLast() }
    }
}

/// Makes the driver a scenario (or `--client`) names.
/// The client drivers netsim can run a scenario with.
public enum DriverFactory {
    public static let available = ["exec", "urlsession", "async-http-client", "naive", "resilient"] + adapters.map(\.name)

    /// Every name `--client` takes: the drivers, and `urllib3` — the reference client by its
    /// library's name, whatever exec client the scenario names. Not a column of `all`: there the
    /// `exec` column runs it already.
    public static let names = available + ["urllib3"]

    /// Real libraries driven through the exec protocol by a bundled client (Fixtures/clients/,
    /// docs/drivers.md), each a `--client` name and a matrix column; `ci/setup` installs what
    /// they need. Their relative paths resolve as a scenario's `command:` does.
    public static let adapters: [(name: String, command: [String])] = [
        ("node-fetch", ["node", "Fixtures/clients/node_fetch_client.mjs"]),
        ("httpx", ["python3", "Fixtures/clients/httpx_client.py"]),
        ("requests", ["python3", "Fixtures/clients/requests_client.py"]),
        ("aiohttp", ["python3", "Fixtures/clients/aiohttp_client.py"]),
        ("curl", ["python3", "Fixtures/clients/curl_client.py"]),
        ("go", ["Fixtures/clients/go_client.sh"]),
        ("okhttp", ["Fixtures/clients/okhttp_client.sh"]),
    ]

    /// The exec client used when a scenario names another driver but `--client exec` (or
    /// `all`) asks for the exec driver: the reference urllib3 client.
    public static let referenceExecCommand = ["python3", "Fixtures/clients/urllib3_client.py"]

    /// - Parameter caFile: the CA the client is given to trust (a TLS scenario); nil in plaintext.
    static func make(_ name: String, scenario: Scenario, options: RunOptions, caFile: String? = nil, placement: ClientPlacement? = nil) throws -> any ClientDriver {
        // No built-in driver speaks h2c (an exec client may: curl --http2-prior-knowledge).
        if scenario.clientsMustSpeakH2C, name != "exec", names.contains(name) {
            throw RunnerError.invalid("\(scenario.file): the upstream speaks h2 without TLS (h2c, prior knowledge) and the \(name) client cannot; "
                + "hint: add 'tls: true' to the upstream (h2 by ALPN), list http/1.1, or run an exec client that speaks h2c")
        }
        let caEnvironment = caFile.map(RunTLS.clientEnvironment(caFile:)) ?? [:]
        /// An exec client, inside the packet link's namespace when there is one.
        func exec(_ command: [String], directory: String) throws -> ExecDriver {
            try ExecDriver(command: (placement?.prefix ?? []) + command, client: scenario.client, workingDirectory: directory,
                           environment: caEnvironment.merging(placement?.environment ?? [:]) { $1 },
                           label: name == "exec" ? options.exec?.name : nil)
        }
        switch name {
        case "exec":
            let command: [String]
            let directory: String
            if let exec = options.exec {
                // The user's own client: its paths are the command line's, not the scenario's.
                directory = exec.directory.map { URL(fileURLWithPath: $0, relativeTo: URL(fileURLWithPath: options.workingDirectory)).path }
                    ?? options.workingDirectory
                command = exec.command
            } else {
                directory = options.workingDirectory
                command = CommandResolver(scenarioFile: scenario.file, workingDirectory: options.workingDirectory)
                    .resolve(scenario.client.command.isEmpty ? referenceExecCommand : scenario.client.command)
            }
            return try exec(command, directory: directory)
        case "urllib3":
            let command = CommandResolver(scenarioFile: scenario.file, workingDirectory: options.workingDirectory).resolve(referenceExecCommand)
            return try exec(command, directory: options.workingDirectory)
        case let adapter where adapters.contains { $0.name == adapter }:
            let command = CommandResolver(scenarioFile: scenario.file, workingDirectory: options.workingDirectory)
                .resolve(adapters.first { $0.name == adapter }!.command)
            return try exec(command, directory: options.workingDirectory)
        case let name where placement != nil && inProcess.contains(name):
            let seed = options.seed(for: scenario)
            return try ExecDriver(command: try placement!.inProcessDriver(name, seed: seed, caFile: caFile), client: scenario.client,
                                  workingDirectory: options.workingDirectory, environment: caEnvironment.merging(placement!.environment) { $1 },
                                  builtin: name)
        default:
            guard let driver = makeInProcess(name, client: scenario.client, seed: options.seed(for: scenario), caFile: caFile) else {
                throw RunnerError.invalid("driver '\(name)' is not available in this netsim; available: \(names.joined(separator: ", "))")
            }
            return driver
        }
    }

    /// The drivers that run inside netsim's process.
    public static let inProcess = ["urlsession", "async-http-client", "naive", "resilient"]

    /// An in-process driver by name (nil for any other name).
    static func makeInProcess(_ name: String, client: ClientSpec, seed: UInt64, caFile: String?) -> (any ClientDriver)? {
        switch name {
        case "urlsession":
            // FoundationNetworking on Linux cannot be given a CA (docs/tls.md): it trusts the
            // system store only; given the run's CA, it says so when that is why a request failed.
            URLSessionDriver(client: client, seed: seed, runCA: caFile)
        case "async-http-client": AsyncHTTPClientDriver(client: client, seed: seed, trusting: caFile)
        case "naive": NaiveDriver(client: client, seed: seed, trusting: caFile)
        case "resilient": ResilientDriver(client: client, seed: seed, trusting: caFile)
        default: nil
        }
    }
}

/// Finds relative paths in a scenario's exec `command:` (an argument with a `/` that does not
/// start with one; a bare `python3` is left to `PATH`) as ``ScenarioPaths`` does; an argument
/// found nowhere is passed as written (the program reports it).
struct CommandResolver {
    var scenarioFile: String
    var workingDirectory: String

    func resolve(_ command: [String]) -> [String] {
        command.map { argument in
            guard argument.contains("/"), !argument.hasPrefix("/") else { return argument }
            let found = ScenarioPaths.resolve(argument, scenarioFile: scenarioFile, workingDirectory: workingDirectory)
            return FileManager.default.fileExists(atPath: found) ? found : argument
        }
    }
}
