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
            Exit status: 0 when every expectation holds, 1 when one fails, 2 when the scenario or \
            the command line is invalid (nothing runs then).

            Example:
              netsim run Scenarios/lockscreen.scn
              netsim run Scenarios/lockscreen.scn --seed 7 --events run.jsonl --json run.json
            """)

    @Argument(help: ArgumentHelp("The scenario file (.scn). Paths are matched case-insensitively: scenarios/lockscreen.scn works.", valueName: "file"))
    var file: String

    @OptionGroup var options: RunnerOptions

    @Option(help: ArgumentHelp("Write the run's event timeline as JSON lines to FILE. Example: --events run.jsonl", valueName: "file"))
    var events: String?

    @Option(help: ArgumentHelp("Write the run (requests, checks, server requests) as JSON to FILE. Example: --json run.json", valueName: "file"))
    var json: String?

    @Option(help: ArgumentHelp("Record both legs of every relayed connection to FILE (pcap; open in Wireshark). Example: --pcap run.pcap", valueName: "file"))
    var pcap: String?

    func run() async throws {
        let scenario = try ScenarioLoading.load(ScenarioFiles.resolve(file))
        let view = LiveView()
        let result: RunResult
        do {
            var runOptions = options.runOptions(observer: view)
            runOptions.pcapPath = pcap
            result = try await ScenarioRunner.run(scenario, options: runOptions)
        } catch let error as RunnerError {
            view.finish()
            throw ScenarioLoading.exit(for: error)
        }
        view.finish()
        print("")
        print(TextReport.render(result, color: isatty(STDOUT_FILENO) == 1))
        if let events {
            let text = result.events.map(\.jsonLine).joined(separator: "\n") + "\n"
            try writeOrFail(text, to: events)
        }
        if let json { try JSONReport.write(JSONReport.object(result), to: json) }
        if !result.passed { throw ExitCode(1) }
    }
}

/// Options `run` and `test` share.
struct RunnerOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Run with this client driver instead of the scenario's. Available: exec.", valueName: "driver"))
    var client: String?

    @Option(help: ArgumentHelp("Seed for every random decision, instead of the scenario's. Example: --seed 7", valueName: "n"))
    var seed: UInt64?

    func runOptions(observer: (any RunObserver)? = nil) -> RunOptions {
        RunOptions(driver: client, seed: seed, observer: observer)
    }
}

/// Loading scenarios with diagnostics, and the exit codes the commands share.
enum ScenarioLoading {
    /// Parses and validates; on errors prints them all (file:line:col, the line, a caret, a hint)
    /// and exits with status 2.
    static func load(_ path: String) throws -> Scenario {
        do {
            return try ScenarioParser.parse(file: path)
        } catch {
            FileHandle.standardError.write(Data((rendered(error) + "\n").utf8))
            throw ExitCode(2)
        }
    }

    /// A parse failure as people read it. (A `catch … as ScenarioErrors` pattern on the parser's
    /// typed throws crashes Swift 6.3's compiler, hence the cast on the value.)
    static func rendered(_ error: any Error) -> String {
        (error as? ScenarioErrors)?.rendered() ?? "\(error)"
    }

    static func exit(for error: RunnerError) -> ExitCode {
        FileHandle.standardError.write(Data("netsim: \(error)\n".utf8))
        switch error {
        case .invalid: return ExitCode(2)
        case .failed: return ExitCode(1)
        }
    }
}

func writeOrFail(_ text: String, to path: String) throws {
    do {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    } catch {
        throw RuntimeError("cannot write \(path): \(error.localizedDescription)")
    }
}
