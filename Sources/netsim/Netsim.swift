import ArgumentParser
import CNetsimAllocator
import Foundation
import NetsimCore

/// The process's entry: the allocator's settings (``MallocTuning``), the open-file limit raised
/// to the hard limit (``OpenFileLimit``: a relay's connections each take two), standard output
/// line-buffered, then the command line, with negative option values joined to their options
/// (``NegativeValues``).
@main
enum NetsimMain {
    static func main() async {
        MallocTuning.apply(environment: ProcessInfo.processInfo.environment)
        OpenFileLimit.raise()
        // Line by line on a pipe or into a file too, as on a terminal: a CI log gets `netsim
        // test`'s PASS/FAIL lines as each run ends (QA 58: stdio held them all to the exit, and a
        // job killed at its time limit left an empty log).
        cnetsim_stdout_line_buffered()
        // ArgumentParser's `main`, with one step before the process ends: an interruption
        // under way (``Interruption``) ends it instead, with its own status and line.
        do {
            var command = try Netsim.parseAsRoot(NegativeValues.joined(Array(CommandLine.arguments.dropFirst())))
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
            Interruption.yieldToHandler()
        } catch {
            Interruption.yieldToHandler()
            Netsim.exit(withError: error)
        }
    }
}

/// `netsim`: reproduce bad networks on a laptop and in CI.
struct Netsim: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "netsim",
        abstract: "A network-condition simulator and test harness.",
        discussion: """
            netsim sits between a client and a server as a userspace TCP relay and makes the link \
            between them slow, lossy or broken in reproducible ways.
            """,
        version: "0.1.0",
        subcommands: [RunCommand.self, TestCommand.self, RelayCommand.self, FaultsCommand.self, CACommand.self, ProfilesCommand.self, BenchCommand.self, DemoCommand.self, HoldCommand.self, CheckCommand.self, ServeCommand.self, ProxyCommand.self, ReplayCommand.self, ProfileCommand.self, JUnitMergeCommand.self, DriverCheckCommand.self, ShellCommand.self, ExecClientCommand.self]
    )
}
