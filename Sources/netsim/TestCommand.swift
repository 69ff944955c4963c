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

            Example:
              netsim test Scenarios/ --junit results.xml --jobs 2
            """)

    @Argument(help: ArgumentHelp("Scenario files or folders (searched recursively for .scn).", valueName: "path"))
    var paths: [String]

    @OptionGroup var options: RunnerOptions

    @Option(help: ArgumentHelp("Write JUnit XML to FILE. Example: --junit results.xml", valueName: "file"))
    var junit: String?

    @Option(help: ArgumentHelp("Write every run as JSON to FILE. Example: --json results.json", valueName: "file"))
    var json: String?

    @Option(help: ArgumentHelp("Scenarios run at once. Default: 2", valueName: "n"))
    var jobs: Int = 2

    @Option(help: ArgumentHelp("Record each scenario's relayed connections to DIR/<scenario-name>.pcap (the folder is created). Example: --pcap captures/", valueName: "dir"))
    var pcap: String?

    func validate() throws {
        guard jobs >= 1 else { throw ValidationError("--jobs must be at least 1") }
    }

    func run() async throws {
        let files = try ScenarioFiles.collect(paths)
        var scenarios: [Scenario] = []
        var invalid = 0
        for file in files {
            do {
                scenarios.append(try ScenarioParser.parse(file: file))
            } catch {
                FileHandle.standardError.write(Data((ScenarioLoading.rendered(error) + "\n").utf8))
                invalid += 1
            }
        }
        if invalid > 0 {
            FileHandle.standardError.write(Data("netsim test: \(invalid) of \(files.count) scenarios are invalid; nothing ran\n".utf8))
            throw ExitCode(2)
        }
        print("netsim test: \(scenarios.count) scenario\(scenarios.count == 1 ? "" : "s"), \(min(jobs, scenarios.count)) at a time")
        let captures = try PcapFolder.paths(for: scenarios.map(\.name), in: pcap)
        let results = await runAll(scenarios, captures: captures)
        var cases: [JUnitReport.Case] = []
        var objects: [[String: Any]] = []
        for (scenario, outcome) in zip(scenarios, results) {
            switch outcome {
            case .success(let result):
                cases.append(JUnitReport.Case(
                    name: scenario.name, file: scenario.file, seconds: Double(result.duration) / 1e9,
                    failure: result.passed ? nil : TextReport.render(result)))
                objects.append(JSONReport.object(result))
            case .failure(let error):
                cases.append(JUnitReport.Case(name: scenario.name, file: scenario.file, seconds: 0, failure: "netsim could not run it: \(error)"))
                objects.append(["scenario": scenario.name, "file": scenario.file, "passed": false, "error": "\(error)"])
            }
        }
        if let junit { try writeOrFail(JUnitReport.render(cases), to: junit) }
        if let json { try JSONReport.write(["runs": objects], to: json) }
        let failed = cases.filter { $0.failure != nil }.count
        print("\(cases.count - failed) passed, \(failed) failed")
        if failed > 0 { throw ExitCode(1) }
    }

    /// Runs at most `jobs` scenarios at once; prints each one's verdict as it finishes.
    private func runAll(_ scenarios: [Scenario], captures: [String?]) async -> [Result<RunResult, RunnerError>] {
        var results = [Result<RunResult, RunnerError>?](repeating: nil, count: scenarios.count)
        let printer = NSLock()
        await withTaskGroup(of: (Int, Result<RunResult, RunnerError>).self) { group in
            var next = 0
            func launch() {
                let index = next
                let scenario = scenarios[index]
                var options = options.runOptions()
                options.pcapPath = captures[index]
                group.addTask {
                    do {
                        return (index, .success(try await ScenarioRunner.run(scenario, options: options)))
                    } catch let error as RunnerError {
                        return (index, .failure(error))
                    } catch {
                        return (index, .failure(.failed("\(error)")))
                    }
                }
                next += 1
            }
            while next < min(jobs, scenarios.count) { launch() }
            while let (index, result) = await group.next() {
                results[index] = result
                printer.withLock {
                    switch result {
                    case .success(let run) where run.passed:
                        print("PASS \(run.scenario.file) (\(run.scenario.name), \(formatNanoseconds(run.duration)))")
                    case .success(let run):
                        print(TextReport.render(run).split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
                        print("FAIL \(run.scenario.file)")
                    case .failure(let error):
                        print("FAIL \(scenarios[index].file): netsim could not run it: \(error)")
                    }
                }
                if next < scenarios.count { launch() }
            }
        }
        return results.map { $0! }
    }
}
