import ArgumentParser
import Foundation
import NetsimRunner

/// `netsim driver-check -- COMMAND`: the exec protocol's conformance check (docs/drivers.md).
struct DriverCheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "driver-check",
        abstract: "Check an exec client against the exec protocol: every message and every error kind.",
        discussion: """
            Starts the client as a scenario run would and drives it through real loopback servers \
            and relay faults: hello and its protocol version, answers (status, lower-cased headers, \
            body, body_sha256, body_length, local_port), the X-Netsim-Request header, a POST body, \
            404/500 as answers, concurrent requests, then each error kind — refused, reset, \
            closed-before-response, timeout, other, tls, dns — and the exit after stdin closes. \
            Each line says what was expected and what the client did.

            Exit status: 0 when every check passes (warnings allowed), 1 when one fails, 2 for a \
            bad command line.

            Example:
              netsim driver-check -- python3 Fixtures/clients/urllib3_client.py
              netsim driver-check --exec-dir clients/ -- node fetch.mjs
            """)

    @Option(help: ArgumentHelp("The client's working directory, where relative paths in its command are found. Default: the current directory", valueName: "dir"))
    var execDir: String?

    @Argument(parsing: .postTerminator, help: ArgumentHelp("The client's command and arguments, after --.", valueName: "command"))
    var command: [String] = []

    func validate() throws {
        if command.isEmpty { throw ValidationError("give the client's command after --, e.g. netsim driver-check -- python3 client.py") }
        if let execDir { try ClientChoice.checkFolder(execDir) }
    }

    func run() async throws {
        let client = ExecClient(command: command, directory: execDir)
        // Each line flushed as it is found (fflush(nil): every stream), so a check stopped by a
        // signal, or read through a pipe, shows how far it got.
        print("netsim driver-check: \(command.joined(separator: " "))")
        fflush(nil)
        let findings = await DriverCheck.run(client) { finding in
            print(finding.line)
            fflush(nil)
        }
        let failed = findings.filter { $0.verdict == .fail }.count
        let warned = findings.filter { $0.verdict == .warn }.count
        print("\(findings.count - failed - warned) passed, \(warned) warning\(warned == 1 ? "" : "s"), \(failed) failed")
        if failed > 0 { throw ExitCode(1) }
    }
}
