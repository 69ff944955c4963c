import Foundation

/// Where a run's client runs when it cannot be netsim's own process: inside a packet link's
/// network namespace. Exec clients get `prefix` before their command; in-process drivers run
/// as `netsim exec-client` (``ExecClientServer``) under the same prefix.
struct ClientPlacement: Sendable {
    /// `ip netns exec NAME`.
    var prefix: [String]
    /// NETSIM_HOST and the other variables a client inside finds.
    var environment: [String: String]

    /// The netsim executable that serves an in-process driver there: this process when it is
    /// netsim, else a `netsim` beside this program (a test bundle in `.build/debug`); nil when
    /// neither exists.
    static let netsimExecutable: String? = {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        let me = count > 0 ? String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) : CommandLine.arguments[0]
        if URL(fileURLWithPath: me).lastPathComponent == "netsim" { return me }
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("netsim").path
        return FileManager.default.isExecutableFile(atPath: beside) ? beside : nil
    }()

    /// The command that runs in-process driver `name` inside.
    func inProcessDriver(_ name: String, seed: UInt64, caFile: String?) throws -> [String] {
        guard let netsim = Self.netsimExecutable else {
            throw RunnerError.invalid("the \(name) driver runs inside netsim, and a packet link's client must run inside its namespace as a process: "
                + "no netsim executable was found to run it there (build the netsim product, or use an exec client)")
        }
        return prefix + [netsim, "exec-client", "--client", name, "--seed", String(seed)] + (caFile.map { ["--ca", $0] } ?? [])
    }
}
