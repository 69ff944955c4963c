import ArgumentParser
import Foundation
import NetsimRunner

/// `netsim exec-client --client NAME`: one of netsim's in-process drivers as an exec client
/// (docs/drivers.md), so it can run where only a process can — inside a packet link's network
/// namespace. The runner starts it; a person can too, to drive e.g. URLSession by hand.
struct ExecClientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "exec-client",
        abstract: "Serve the exec protocol on stdin/stdout with one of netsim's in-process drivers.",
        discussion: """
            The runner uses it to run an in-process driver (\(DriverFactory.inProcess.joined(separator: ", "))) \
            inside a packet link's namespace (link mode packet, docs/packet.md). Reads the config line, \
            answers hello, then one answer per request line until stdin ends; the driver's log goes to stderr.
            """)

    @Option(help: ArgumentHelp("The driver: \(DriverFactory.inProcess.joined(separator: ", ")).", valueName: "name"))
    var client: String

    @Option(help: ArgumentHelp("Seed for the driver's random choices (jittered back-off). Default: 1", valueName: "n"), transform: parseSeed)
    var seed: UInt64 = 1

    @Option(help: ArgumentHelp("A CA certificate file the driver trusts (a TLS upstream).", valueName: "file"))
    var ca: String?

    func validate() throws {
        guard DriverFactory.inProcess.contains(client) else {
            throw ValidationError("--client must be one of \(DriverFactory.inProcess.joined(separator: ", ")); exec clients are programs of their own")
        }
    }

    func run() async throws {
        do {
            try await ExecClientServer.serve(driver: client, seed: seed, caFile: ca)
        } catch {
            printStatus("netsim exec-client: \(error)")
            throw ExitCode(2)
        }
    }
}
