#if canImport(Glibc)
import Foundation
import NetsimCore
import Glibc
import NetsimPacket

/// One `netsim shell` for the packet part of the benchmark: the namespace and its path, and
/// commands run inside (their standard output captured), always torn down.
// `@unchecked Sendable`: used by the benchmark's task only, in order.
final class PacketBenchSession: @unchecked Sendable {
    let shell: PacketShell

    init(link: PacketLinkConfiguration) throws {
        shell = try PacketShell(link: link, seed: 1, tap: nil)
    }

    /// NETSIM_HOST: where the host side's servers listen.
    var host: String { shell.namespace.plan.host.description }

    /// Runs `command` inside the namespace and returns its standard output; fails when it exits
    /// non-zero or is still running after `timeout` seconds (then it is killed).
    func run(_ command: [String], timeout: Double) throws -> String {
        guard let ip = IPRoute.executable else { throw RuntimeError("needs iproute2's `ip`") }
        return try capturedOutput(ip, ["netns", "exec", shell.namespace.name.description] + command, timeout: timeout)
    }

    @discardableResult
    func close() -> PacketCounters { shell.close() }
}

/// Runs `executable` with `arguments` to its end (at most `timeout` seconds) and returns its
/// standard output; its standard error is in the error when it fails.
func capturedOutput(_ executable: String, _ arguments: [String], timeout: Double) throws -> String {
    let output = Pipe(), errors = Pipe()
    let process = try SpawnedProcess(executable, arguments, standardOutput: .pipe(output), standardError: .pipe(errors))
    // Read while it runs: a full pipe would stall it.
    let collected = CapturedStreams()
    let readers = DispatchGroup()
    for (pipe, isOutput) in [(output, true), (errors, false)] {
        readers.enter()
        Thread {
            collected.set(pipe.fileHandleForReading.readDataToEndOfFile(), output: isOutput)
            readers.leave()
        }.start()
    }
    guard let termination = process.waitForExit(timeout: .seconds(timeout)) else {
        process.send(SIGKILL)
        process.waitForExit(timeout: .seconds(3))
        throw RuntimeError("\(URL(fileURLWithPath: executable).lastPathComponent) \(arguments.joined(separator: " ")) took longer than \(Int(timeout)) s")
    }
    _ = readers.wait(timeout: .now() + 5)
    let (stdout, stderr) = collected.texts
    guard termination == .exited(0) else {
        throw RuntimeError("\(arguments.prefix(6).joined(separator: " ")) ended with \(termination): \(stderr.suffix(400))")
    }
    return stdout
}

/// A child's two output streams, each set once by its reader thread.
private final class CapturedStreams: @unchecked Sendable {
    // `@unchecked Sendable`: every access holds `lock`.
    private let lock = NSLock()
    private var output = Data()
    private var errors = Data()

    func set(_ data: Data, output isOutput: Bool) {
        lock.withLock { if isOutput { output = data } else { errors = data } }
    }

    var texts: (String, String) {
        lock.withLock { (String(decoding: output, as: UTF8.self), String(decoding: errors, as: UTF8.self)) }
    }
}

/// The benchmark's Python clients: the same code measures the packet path (run in the
/// namespace) and the relay (run on the host), so the two differ only in what carries the bytes.
enum BenchPython {
    /// `HOST PORT N`: N timed 100-byte ping-pongs after 5 untimed; prints the round trips in ns.
    static let pingPong = """
        import socket, sys, time
        s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        m = b'B' * 100
        out = []
        for i in range(int(sys.argv[3]) + 5):
            t = time.monotonic_ns()
            s.sendall(m)
            got = 0
            while got < 100:
                d = s.recv(100 - got)
                if not d: raise SystemExit('the echo server closed')
                got += len(d)
            if i >= 5: out.append(time.monotonic_ns() - t)
        print(' '.join(map(str, out)))
        """

    /// `HOST PORT BYTES SKIP`: asks a sized-answers server for BYTES and prints the bytes that
    /// came after the first SKIP seconds of the download and the nanoseconds they took.
    static let download = """
        import socket, struct, sys, time
        s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
        n, skip = int(sys.argv[3]), float(sys.argv[4]) * 1e9
        s.sendall(struct.pack('>Q', n))
        buf = bytearray(262144)
        got, first, mark, mark_bytes, last = 0, None, None, 0, 0
        while got < n:
            k = s.recv_into(buf)
            if k == 0: raise SystemExit('the server closed the stream')
            last = time.monotonic_ns()
            got += k
            if first is None: first = last
            if mark is None and last - first >= skip: mark, mark_bytes = last, got
        print(got - mark_bytes, last - mark)
        """
}
#endif
