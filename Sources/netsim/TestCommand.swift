import ArgumentParser
import Foundation
import NetsimCore
import NetsimRunner
import NetsimScenario

/// `netsim test`: a suite of scenarios, in parallel, for CI.
struct TestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test",
        abstract: "Run every scenario in folders or files; report JUnit/JSON; end with `N passed, N failed`.",
        discussion: """
            Every scenario is validated first; if any is invalid, all errors are printed and nothing \
            runs (exit status 2). Otherwise the exit status is 0 when all pass, 1 when any fails. \
            Each run gets its own relay and server on free loopback ports, so --jobs never clash.

            With more than one driver (--client all) the output ends, just before the summary line, \
            with a client × scenario matrix: each cell `pass` or the first failed check. With \
            --matrix-baseline the exit status says whether the matrix matches the baseline instead.

            With --shard I/N only the I-th of N disjoint parts of the scenarios runs (by name, the \
            same on every machine): give every CI runner the same paths and its own I.

            On a terminal a progress block shows what runs, the time and the verdicts so far; \
            never on a pipe, with CI set, or with TERM=dumb.

            Example:
              netsim test Scenarios/ --junit results.xml --jobs 2
              netsim test Scenarios/ --client all --html results.html
              netsim test Scenarios/ --client all --repeat 3 --matrix-baseline docs/clients-matrix.md
              netsim test Scenarios/ --shard 2/4 --junit results-2.xml
            """)

    @Argument(help: ArgumentHelp("Scenario files or folders (searched recursively for .scn).", valueName: "path"))
    var paths: [String]

    @OptionGroup var options: RunnerOptions

    @OptionGroup(title: "Client matrix") var matrixOptions: MatrixOptions

    @Option(help: ArgumentHelp("Write JUnit XML to FILE. Example: --junit results.xml", valueName: "file"))
    var junit: String?

    @Option(help: ArgumentHelp("Write every run as JSON to FILE. Example: --json results.json", valueName: "file"))
    var json: String?

    @Option(help: ArgumentHelp("Write every run as one self-contained HTML page to FILE: verdicts, checks, each run's timeline, and with several drivers the client × scenario table linking to them. Example: --html results.html", valueName: "file"))
    var html: String?

    @Option(help: ArgumentHelp("Scenarios run at once.", valueName: "n"), transform: parseCount)
    var jobs: Int = 2

    @Option(help: ArgumentHelp("Record each scenario's relayed connections to DIR/<scenario-name>.pcap, or DIR/<scenario-name>-<client>.pcap with --client or --exec (the folder is created). Example: --pcap captures/", valueName: "dir"))
    var pcap: String?

    @Option(help: ArgumentHelp("Run only the I-th of N disjoint parts of the scenarios, split by name the same way on every machine (one CI runner each; 1 ≤ I ≤ N). Example: --shard 2/4", valueName: "I/N"))
    var shard: String?

    func validate() throws {
        guard jobs >= 1 else { throw ValidationError("--jobs must be at least 1") }
        // A matrix written over its own baseline is how ci/update-matrix regenerates it: allowed.
        // Distinct before the writability probe, which opens each path for writing (QA 60).
        try OutputFile.checkDistinct([("--junit", junit), ("--json", json), ("--html", html), ("--matrix", matrixOptions.matrix)],
                                     inputs: paths + paths.map(ScenarioFiles.resolve))
        for (path, option) in [(junit, "--junit"), (json, "--json"), (html, "--html"), (matrixOptions.matrix, "--matrix")] {
            try OutputFile.check(path, option: option, standardOutputHolds: "the suite's report")
        }
        if let pcap { try PcapFolder.create(pcap) }
    }

    @OptionGroup(title: "Diagnostics") var logging: LoggingOptions

    func run() async throws {
        logging.bootstrap()
        Interruption.install(for: "test")
        let started = (date: Date(), instant: ContinuousClock.now)
        let shard = try ShardOption.parse(self.shard)
        removeEarlierReports()
        // A path that names no scenario is invalid input, as for `netsim run` and `netsim check`
        // (exit 2), not a usage error; the scenarios found elsewhere are still checked.
        let (files, notFound) = ScenarioFiles.collect(paths)
        if let notFound { StandardStream.error.write("\(notFound)\n") }
        var scenarios: [Scenario] = []
        var invalid: [JUnitReport.Case] = (notFound?.paths ?? []).map {
            JUnitReport.Case(name: $0.path, file: $0.path, seconds: 0, failure: nil, error: "\($0.path): \($0.problem); nothing ran")
        }
        for file in files {
            do {
                scenarios.append(try ScenarioParser.parseToRun(file: file))
            } catch {
                let rendered = ScenarioLoading.rendered(error)
                StandardStream.error.write(rendered + "\n")
                // The first error first: it is the `message` CI shows (QA 58: "the scenario is invalid").
                invalid.append(JUnitReport.Case(name: (file as NSString).lastPathComponent, file: file, seconds: 0, failure: nil,
                                                error: "\(rendered)\nthe scenario is invalid; nothing ran"))
            }
        }
        if !invalid.isEmpty {
            // CI reads the JUnit file, not standard error: it says why nothing ran, one error per
            // invalid scenario, as pytest reports its collection errors (QA 52: no file at all),
            // and the valid ones as skipped (QA 58: the suite seemed to hold one test).
            let missing = notFound?.paths.count ?? 0
            let bad = invalid.count - missing
            let what = [missing > 0 ? "\(missing) path\(missing == 1 ? " names" : "s name") no scenario" : nil,
                        bad > 0 ? "\(bad) of \(files.count) scenario\(files.count == 1 ? " is" : "s are") invalid" : nil].compactMap { $0 }.joined(separator: " and ")
            let reason = "not run: \(what), and a suite runs only when all are valid"
            writeNothingRan(invalid + scenarios.map { JUnitReport.Case(name: $0.name, file: $0.file, seconds: 0, failure: nil, skipped: reason) },
                            shard: shard)
            StandardStream.error.write("netsim test: \(what); nothing ran\n")
            throw ExitCode(2)
        }
        // Scenarios this machine cannot run (link mode packet without root): said, not failed,
        // and skipped in the reports.
        let unrunnable = Dictionary(scenarios.compactMap { scenario in ScenarioRunner.cannotRun(scenario).map { (scenario.file, $0) } },
                                    uniquingKeysWith: { first, _ in first })
        if let reason = unrunnable.values.first {
            let names = scenarios.filter { unrunnable[$0.file] != nil }.map(\.name)
            print("netsim test: skipping \(names.joined(separator: ", ")): \(reason) (docs/packet.md)")
        }
        let skipped = ShardOption.select(scenarios.filter { unrunnable[$0.file] != nil }, shard: shard).map { scenario in
            (scenario, "skipped: \(unrunnable[scenario.file]!) (docs/packet.md)")
        }
        scenarios.removeAll { unrunnable[$0.file] != nil }
        let all = scenarios.count
        scenarios = ShardOption.select(scenarios, shard: shard)
        if let shard { print("netsim test: shard \(shard): \(scenarios.count) of \(all) scenario\(all == 1 ? "" : "s")") }
        let baseline = try matrixOptions.loadBaseline()
        // Every scenario with every driver asked for (`--client all`: each driver in turn),
        // `--repeat` times: round after round, so a cell's runs see different moments.
        let drivers = options.drivers
        let rounds = matrixOptions.rounds
        let jobs = (1...rounds).flatMap { round in
            scenarios.flatMap { scenario in drivers.map { Job(scenario: scenario, client: $0, round: round, rounds: rounds) } }
        }
        print("netsim test: \(jobs.count) run\(jobs.count == 1 ? "" : "s") of \(scenarios.count) scenario\(scenarios.count == 1 ? "" : "s"), \(min(self.jobs, jobs.count)) at a time")
        let captures = try PcapFolder.paths(for: jobs.map(\.baseName), in: pcap)
        let seeds = jobs.map { options.runOptions($0.client).seed(for: $0.scenario) }
        let destinations = SuiteReports.Destinations(junit: junit, json: json, html: html, suiteName: ShardOption.suiteName(shard),
                                                     title: "netsim test " + paths.joined(separator: " "), started: started)
        let ledger = SuiteLedger(runs: jobs.count)
        Interruption.reportWhenInterrupted { signal in
            Self.writePartialReports(ledger, jobs: jobs, unrunnable: skipped, seeds: seeds, signal: signal, to: destinations)
        }
        let results = await runAll(jobs, captures: captures, ledger: ledger)
        Interruption.yieldToHandler()  // runs an interruption ended: its handler reports them
        let reports = SuiteReports(jobs: jobs, standings: results.map { .done($0) }, unrunnable: skipped, seeds: seeds)
        // The matrix (and its comparison with the baseline) ends the output, before the counts.
        let wantsMatrix = matrixOptions.wanted(drivers: drivers.count)
        let comparison = try wantsMatrix ? matrixOptions.report(reports.measurement, baseline: baseline, paths: paths, clients: options.commandLine) : nil
        // A report that cannot be saved (the disk filled during the run) is said, and the
        // others are still written; the counts stay the last line.
        var unsaved: [String] = []
        if wantsMatrix {
            do { try matrixOptions.write(reports.measurement, baseline: baseline) } catch { unsaved.append("\(error)") }
        }
        let rows = Job.rowNames(scenarios)
        let cases = comparison.map { JUnitReport.cells(reports.cases, cells: jobs.map { (rows[$0.scenario.file]!, $0.column) }, comparison: $0) }
        if ledger.report(interrupted: false, { _ in unsaved += reports.write(to: destinations, cases: cases, matrix: wantsMatrix ? reports.measurement : nil) }) != .written {
            Interruption.yieldToHandler()
        }
        for message in unsaved { StandardStream.error.write("Error: \(message)\n") }
        let failed = reports.failed  // failed, or netsim could not run it
        if !skipped.isEmpty { print("\(skipped.count) skipped (not runnable here, see above)") }
        // Which ones, just above the counts, where a CI log is read (QA 64: it took scrolling);
        // with a matrix, the matrix says it.
        let notPassed = reports.cases.filter(\.didNotPass)
        if !wantsMatrix, !notPassed.isEmpty {
            let names = notPassed.prefix(20).map(\.name).joined(separator: ", ") + (notPassed.count > 20 ? ", … and \(notPassed.count - 20) more" : "")
            let errors = notPassed.filter { $0.error != nil }.count
            print("failed: \(names)" + (errors > 0 ? " (\(errors == notPassed.count ? "all" : "\(errors)") of them netsim could not run)" : ""))
        }
        print("\(reports.cases.count - failed) passed, \(failed) failed")
        if !unsaved.isEmpty { throw ExitCode(1) }
        // With a baseline, the matrix decides: known failures are what the baseline says.
        if let comparison {
            if !comparison.matches { throw ExitCode(1) }
        } else if failed > 0 {
            throw ExitCode(1)
        }
    }

    /// What an earlier suite left at this one's report paths goes first (``OutputFile/removeEarlierReports(_:)``).
    private func removeEarlierReports() {
        OutputFile.removeEarlierReports([junit, json, html])
    }

    /// The JUnit report of a suite that did not run (a path without scenarios, an invalid
    /// scenario): CI reads it, not standard error (QA 52, QA 58).
    private func writeNothingRan(_ cases: [JUnitReport.Case], shard: Shard?) {
        guard let junit else { return }
        do { try writeOrFail(JUnitReport.render(cases, suiteName: ShardOption.suiteName(shard)), to: junit) } catch {
            StandardStream.error.write("Error: \(error)\n")
        }
    }

    /// Runs at most `jobs` scenarios at once; prints each one's verdict as it finishes.
    /// One scenario with one client (`driver == nil`: the scenario's own).
    struct Job {
        var scenario: Scenario
        var client = ClientChoice()
        /// The column's name when a client was chosen (nil: the scenario's own).
        var driver: String? { client.driver == nil && client.exec == nil ? nil : client.column }
        var round = 1
        var rounds = 1
        /// `lockscreen`, or `lockscreen [naive]` when a driver is chosen.
        var baseName: String { driver.map { "\(scenario.name) [\($0)]" } ?? scenario.name }
        /// `lockscreen [naive]`, `lockscreen [naive] (run 2 of 3)` with --repeat.
        var name: String { baseName + runSuffix }
        var runSuffix: String { rounds > 1 ? " (run \(round) of \(rounds))" : "" }
        /// The matrix column: the driver, or `client` for the scenario's own.
        var column: String { client.column }
        /// The client as `--client` chose it, for `--json`; nil for the scenario's own.
        var chosenClient: String? { client.arguments.isEmpty ? nil : column }

        /// The command that runs this one again alone, as it ran (QA 58: a CI failure did not
        /// say its seed): `netsim run FILE --client naive --seed 7`.
        func rerun(seed: UInt64) -> String {
            ShellQuoting.line(["netsim", "run", scenario.file] + client.arguments + ["--seed", String(seed)])
        }

        /// The matrix row of each scenario file: its name, or its file when two share a name.
        static func rowNames(_ scenarios: [Scenario]) -> [String: String] {
            let counts = Dictionary(scenarios.map { ($0.name, 1) }, uniquingKeysWith: +)
            return Dictionary(scenarios.map { ($0.file, counts[$0.name]! > 1 ? $0.file : $0.name) }, uniquingKeysWith: { a, _ in a })
        }
    }

    /// A run netsim could not make, and how long it tried (a client's hello waited for 20 s: it
    /// was reported as taking no time, QA 58).
    struct CouldNotRun: Error {
        var error: RunnerError
        var seconds: Double
    }

    /// The interruption's reports: what finished, what it stopped, what never started; returns
    /// what was written for the handler's line.
    private static func writePartialReports(_ ledger: SuiteLedger, jobs: [Job], unrunnable: [(Scenario, String)], seeds: [UInt64],
                                            signal: String, to destinations: SuiteReports.Destinations) -> String? {
        let paths = [destinations.junit, destinations.json, destinations.html].compactMap { $0 }
        guard !paths.isEmpty else { return nil }
        var said = ""
        switch ledger.report(interrupted: true, { standings in
            let reports = SuiteReports(jobs: jobs, standings: standings, unrunnable: unrunnable, interruption: signal, seeds: seeds)
            let unsaved = reports.write(to: destinations)
            let stopped = standings.filter { if case .running = $0 { true } else { false } }.count
            let finished = standings.filter { if case .done = $0 { true } else { false } }.count
            said = "reports of what finished written to \(paths.joined(separator: ", ")) (\(finished) run\(finished == 1 ? "" : "s") finished, "
                + "\(stopped) stopped, \(standings.count - finished - stopped) not started)"
                + unsaved.map { "; \($0)" }.joined()
        }) {
        case .written: return said
        case .writtenBefore: return "the suite's reports were written"
        case .notNow: return nil
        }
    }

    private func runAll(_ jobs: [Job], captures: [String?], ledger: SuiteLedger) async -> [Result<RunResult, CouldNotRun>] {
        var results = [Result<RunResult, CouldNotRun>?](repeating: nil, count: jobs.count)
        let progress = ProgressDisplay(title: "netsim test", total: jobs.count)
        defer { progress.stop() }
        await withTaskGroup(of: (Int, Result<RunResult, CouldNotRun>).self) { group in
            var next = 0
            func launch() {
                let index = next
                next += 1
                guard ledger.start(index) else { return }
                let scenario = jobs[index].scenario
                var options = options.runOptions(jobs[index].client)
                options.pcapPath = captures[index]
                progress.started(jobs[index].name)
                group.addTask {
                    let start = ContinuousClock.now
                    do {
                        return (index, .success(try await ScenarioRunner.run(scenario, options: options)))
                    } catch {
                        let seconds = (ContinuousClock.now - start) / .seconds(1)
                        return (index, .failure(CouldNotRun(error: error as? RunnerError ?? .failed("\(error)"), seconds: seconds)))
                    }
                }
            }
            while next < min(self.jobs, jobs.count) { launch() }
            while let (index, result) = await group.next() {
                results[index] = result
                ledger.finished(index, result)
                switch result {
                case .success(let run) where run.passed:
                    progress.emit("PASS \(run.scenario.file) (\(run.scenario.name), \(run.driverName), \(formatNanoseconds(run.duration)))\(jobs[index].runSuffix)")
                case .success(let run):
                    progress.emit(TextReport.render(run).split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
                    progress.emit("FAIL \(run.scenario.file) (\(run.scenario.name), \(run.driverName), \(formatNanoseconds(run.duration)))\(jobs[index].runSuffix)")
                    progress.emit("  again: \(jobs[index].rerun(seed: run.seed))")
                case .failure(let failure):
                    progress.emit("FAIL \(jobs[index].scenario.file)\(jobs[index].driver.map { " [\($0)]" } ?? "")\(jobs[index].runSuffix): netsim could not run it: \(failure.error)")
                    progress.emit("  again: \(jobs[index].rerun(seed: options.runOptions(jobs[index].client).seed(for: jobs[index].scenario)))")
                }
                progress.finished(jobs[index].name, passed: (try? result.get())?.passed ?? false)
                if next < jobs.count { launch() }
            }
        }
        // A run never started is the interruption's (its handler reports it as not run).
        return results.map { $0 ?? .failure(CouldNotRun(error: .failed("not started: the suite was interrupted first"), seconds: 0)) }
    }
}
