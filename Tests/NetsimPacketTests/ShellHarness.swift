import Foundation
import NetsimCore
import NetsimLoopback
import NetsimPacket
#if canImport(Glibc)
import Glibc
#endif

/// Running `netsim shell` as a person would, for the tests that need root and /dev/net/tun.
enum ShellHarness {
    /// nil when these tests can run; else why not (they are skipped with this message).
    static let missing: String? = PacketShellRequirements.missing()
    static var canRun: Bool { missing == nil }

    static var executable: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("netsim")
    }

    /// Starts `netsim shell FLAGS -- sh -c SCRIPT` whose script first prints `host=$NETSIM_HOST`
    /// (or another variable) and reads one line (the port of a server the test then starts on that
    /// address) into $port.
    static func start(_ flags: [String], script: String, announcing variable: String = "NETSIM_HOST") async throws -> (WatchedProcess, host: String) {
        let wrapped = "echo host=$\(variable); read port; " + script
        let process = try WatchedProcess(executable, ["shell"] + flags + ["--", "sh", "-c", wrapped], standardInput: true)
        let line = try await process.line(.output, within: .seconds(30)) { $0.hasPrefix("host=") }
        return (process, String(line.dropFirst("host=".count)))
    }

    /// Runs `netsim shell ARGUMENTS` to the end (at most `timeout`).
    static func run(_ arguments: [String], timeout: Duration = .seconds(60)) async throws -> WatchedProcess.Result {
        try await WatchedProcess(executable, ["shell"] + arguments).result(within: timeout)
    }

    /// Runs `netsim relay` towards a closed port with `flags` it should refuse (at most 30 s).
    static func relay(_ flags: [String]) async throws -> WatchedProcess.Result {
        try await WatchedProcess(executable, ["relay", "--upstream", "127.0.0.1:9"] + flags).result(within: .seconds(30))
    }

    /// Runs a tool (sha256sum, tshark, ip) and returns its standard output.
    static func tool(_ path: String, _ arguments: [String], timeout: Duration = .seconds(60)) async throws -> String {
        try await WatchedProcess(URL(fileURLWithPath: path), arguments).result(within: timeout).standardOutput
    }

    /// Names under /run/netns.
    static func namespaces() -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: "/run/netns")) ?? []
    }

    static func temporaryPath(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("netsim-packet-\(getpid())-\(UUID().uuidString.prefix(8))-\(name)").path
    }
}

/// An HTTP/1.1 server on the shell's host side (never loopback, never a wildcard) that answers
/// every request with `body` and closes.
final class HostSideServer {
    let server: LoopbackServer

    init(host: String, body: [UInt8]) throws {
        server = try LoopbackServer(host: host) { socket in
            var request: [UInt8] = []
            while !request.ends(with: Array("\r\n\r\n".utf8)) {
                guard let chunk = try? socket.receive(timeout: .seconds(30)), !chunk.isEmpty else { return }
                request += chunk
            }
            let head = "HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n"
            guard (try? socket.send(Array(head.utf8) + body)) != nil else { return }
            socket.shutdownWrite()
            _ = try? socket.receiveToEnd(timeout: .seconds(30))
        }
    }

    var port: Int { server.endpoint.port }

    func stop() { server.stop() }
}

extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }

    /// Deterministic, incompressible-looking bytes.
    static func pattern(count: Int, seed: UInt64) -> [UInt8] {
        var random = SeededRandom(seed: seed)
        return (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) }
    }
}
