import Foundation
import NetsimCore
import NetsimRunner
import NetsimScenario

/// Where each run of a `netsim test` suite stands, kept as the runs go, so that a suite
/// interrupted (a CI job cancelled or at its time limit: SIGINT, SIGTERM) still reports what
/// finished, as pytest's `--junitxml` does. Before, it wrote nothing, and CI showed no test
/// results for a job that had run for most of an hour.
// `@unchecked Sendable`: all state is behind `lock`; runs finish on any task, the interruption's
// handler runs on its own thread.
final class SuiteLedger: @unchecked Sendable {
    enum Standing {
        case waiting
        case running(since: ContinuousClock.Instant)
        case done(Result<RunResult, TestCommand.CouldNotRun>)
    }

    private let lock = NSLock()
    private var standings: [Standing]
    /// Set once the reports are written, by the suite's end or by the interruption's handler:
    /// whichever comes first writes them, once.
    private var reported = false

    init(runs: Int) { standings = Array(repeating: .waiting, count: runs) }

    /// Marks run `index` started; false, and nothing marked, once an interruption has begun:
    /// nothing starts after Ctrl-C (QA 66: runs the cleanup ended made room for new ones).
    func start(_ index: Int) -> Bool {
        lock.withLock {
            guard !Interruption.isUnderWay else { return false }
            standings[index] = .running(since: .now)
            return true
        }
    }

    /// A run's outcome, unless an interruption has begun: a run failed by the cleanup (its exec
    /// client sent SIGTERM) is not a verdict; it stays running, reported as interrupted.
    func finished(_ index: Int, _ result: Result<RunResult, TestCommand.CouldNotRun>) {
        lock.withLock { if !Interruption.isUnderWay { standings[index] = .done(result) } }
    }

    enum Reporting { case written, writtenBefore, notNow }

    /// Runs `write` with the standings so far, unless the reports were written already. The
    /// suite's end passes `interrupted: false` and writes nothing once an interruption has begun
    /// (`notNow`: the handler's reports are the suite's). The handler waits for the end's writing
    /// under way, at most `patience` (`notNow` after it), rather than cut it.
    func report(interrupted: Bool, patience: TimeInterval = 10, _ write: ([Standing]) -> Void) -> Reporting {
        guard lock.lock(before: Date(timeIntervalSinceNow: patience)) else { return .notNow }
        defer { lock.unlock() }
        if reported { return .writtenBefore }
        guard interrupted || !Interruption.isUnderWay else { return .notNow }
        reported = true
        write(standings)
        return .written
    }
}

/// What a suite's reports say of its runs (`--junit`, `--json`, `--html`, the matrix), made from
/// their standings: in job order, a finished run as its verdict, one the interruption stopped as
/// an error, one that never started as skipped.
struct SuiteReports {
    var cases: [JUnitReport.Case] = []
    var entries: [JSONReport.Entry] = []
    var pages: [HTMLReport.Entry] = []
    var measurement = MatrixMeasurement()
    /// Scenarios not run, and why: this machine cannot run them, or the suite was interrupted first.
    var notRun: [(scenario: Scenario, reason: String)]
    /// The signal that interrupted the suite (`SIGTERM`), nil when it ran to its end.
    var interruption: String?

    /// `seeds[i]`: the seed job i was to use, for the command that runs it again.
    init(jobs: [TestCommand.Job], standings: [SuiteLedger.Standing], unrunnable: [(Scenario, String)],
         interruption: String? = nil, seeds: [UInt64]) {
        notRun = unrunnable.map { (scenario: $0.0, reason: $0.1) }
        self.interruption = interruption
        var seen = Set<String>()
        let rows = TestCommand.Job.rowNames(jobs.map(\.scenario).filter { seen.insert($0.file).inserted })
        for (index, (job, standing)) in zip(jobs, standings).enumerated() {
            let place = HTMLReport.MatrixPlace(scenario: rows[job.scenario.file]!, driver: job.column)
            switch standing {
            case .done(.success(let result)):
                cases.append(JUnitReport.Case(
                    name: job.name, file: job.scenario.file, seconds: Double(result.duration) / 1e9,
                    failure: result.passed ? nil : TextReport.render(result) + "\nagain: \(job.rerun(seed: result.seed))",
                    message: JUnitReport.message(for: result)))
                var entry = JSONReport.Run(result)
                (entry.client, entry.again) = (job.chosenClient, job.rerun(seed: result.seed))
                entries.append(.run(entry))
                measurement.add(scenario: rows[job.scenario.file]!, driver: job.column, MatrixOutcome(result))
                pages.append(HTMLReport.Entry(.run(result), cell: place))
            case .done(.failure(let failure)):
                couldNotRun(job, "\(failure.error)", junit: "netsim could not run it: \(failure.error)", seconds: failure.seconds, seed: seeds[index], place: place)
            case .running(let since):
                let seconds = (ContinuousClock.now - since) / .seconds(1)
                let why = "interrupted by \(interruption ?? "a signal") after \(String(format: "%.1f", seconds)) s: it did not finish"
                couldNotRun(job, why, junit: why, seconds: seconds, seed: seeds[index], place: place)
            case .waiting:
                // Each job's scenario once (a scenario's other drivers and rounds are in its name).
                if !notRun.contains(where: { $0.scenario.file == job.scenario.file }) {
                    notRun.append((job.scenario, "not run: the suite was interrupted by \(interruption ?? "a signal") first"))
                }
            }
        }
    }

    /// A run without a verdict: netsim could not run it, or the interruption stopped it. `junit`
    /// says so alone (CI shows the error without the run's name), `why` beside the run's name.
    private mutating func couldNotRun(_ job: TestCommand.Job, _ why: String, junit: String, seconds: Double, seed: UInt64,
                                      place: HTMLReport.MatrixPlace) {
        cases.append(JUnitReport.Case(name: job.name, file: job.scenario.file, seconds: seconds, failure: nil,
                                      error: "\(junit)\nagain: \(job.rerun(seed: seed))"))
        entries.append(.failure(JSONReport.Failure(scenario: job.scenario.name, file: job.scenario.file,
                                                   driver: job.driver ?? job.scenario.client.driver, seed: seed, error: why,
                                                   client: job.chosenClient, again: job.rerun(seed: seed))))
        measurement.add(scenario: place.scenario, driver: place.driver, .error)
        pages.append(HTMLReport.Entry(.failure(scenario: job.scenario.name, file: job.scenario.file, driver: job.column, error: why), cell: place))
    }

    /// Failed, or without a verdict.
    var failed: Int { cases.filter(\.didNotPass).count }

    /// Where the reports go and what frames them.
    struct Destinations {
        var junit: String?
        var json: String?
        var html: String?
        var suiteName: String
        var title: String
        var started: (date: Date, instant: ContinuousClock.Instant)
    }

    /// Writes each report asked for; returns why any could not be saved (the others are still
    /// written). `cases` are the JUnit cases (per matrix cell with a baseline); `matrix` is given
    /// when the suite's JSON and HTML carry one.
    func write(to destinations: Destinations, cases: [JUnitReport.Case]? = nil, matrix: MatrixMeasurement? = nil) -> [String] {
        var unsaved: [String] = []
        func save(_ write: () throws -> Void) {
            do { try write() } catch { unsaved.append("\(error)") }
        }
        if let junit = destinations.junit {
            let skipped = notRun.map { JUnitReport.Case(name: $0.scenario.name, file: $0.scenario.file, seconds: 0, failure: nil, skipped: $0.reason) }
            let run = JUnitReport.Run(started: destinations.started.date, seconds: (ContinuousClock.now - destinations.started.instant) / .seconds(1))
            save { try writeOrFail(JUnitReport.render((cases ?? self.cases) + skipped, suiteName: destinations.suiteName, run: run), to: junit, option: "--junit") }
        }
        if let json = destinations.json {
            let skipped = notRun.map { JSONReport.Suite.Skipped(scenario: $0.scenario.name, file: $0.scenario.file, reason: $0.reason) }
            let suite = JSONReport.Suite(runs: entries, matrix: matrix.map(JSONReport.Matrix.init), skipped: skipped, interrupted: interruption)
            save { try writeOrFail(JSONReport.data(suite), to: json, option: "--json") }
        }
        if let html = destinations.html {
            let title = destinations.title + (interruption.map { " (interrupted by \($0))" } ?? "")
            save { try writeOrFail(HTMLReport.render(pages, matrix: matrix, title: title), to: html, option: "--html") }
        }
        return unsaved
    }
}
