#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import NetsimCore

/// A child process the benchmark starts and always stops: the relay and the connection holder
/// of the rss part, socat for the throughput comparison.
final class ChildProcess: Sendable {
    let name: String
    private let process: SpawnedProcess
    private let standardError: Pipe?

    /// Starts `executable` with `arguments`. Standard output is discarded; standard error is
    /// kept for ``waitForLine(containing:timeout:)`` when `captureStandardError` is true.
    init(name: String, executable: String, arguments: [String], captureStandardError: Bool) throws {
        self.name = name
        standardError = captureStandardError ? Pipe() : nil
        do {
            process = try SpawnedProcess(executable, arguments, standardError: standardError.map { .pipe($0) } ?? .null)
        } catch {
            throw RuntimeError("cannot start \(name) (\(executable)): \(error)")
        }
    }

    var pid: Int32 { process.pid }
    var isRunning: Bool { process.isRunning }

    /// Reads standard error until a line containing `marker` and returns that line; at most
    /// `timeout` seconds. What the child writes afterwards is read and discarded, so it never
    /// blocks on a full pipe.
    func waitForLine(containing marker: String, timeout: Double) throws -> String {
        guard let fd = standardError?.fileHandleForReading.fileDescriptor else {
            throw RuntimeError("\(name): standard error is not captured")
        }
        let deadline = monotonicSeconds() + timeout
        var pending: [UInt8] = []
        var earlier: [String] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let remaining = deadline - monotonicSeconds()
            guard remaining > 0 else { break }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, Int32(max(1, remaining * 1000)))
            if ready < 0, errno == EINTR { continue }
            guard ready > 0 else { continue }
            let n = read(fd, &chunk, chunk.count)
            if n < 0, errno == EINTR { continue }
            guard n > 0 else {
                throw RuntimeError("\(name) exited before printing '\(marker)'; it said: \(earlier.joined(separator: " | "))")
            }
            pending += chunk[..<n]
            while let newline = pending.firstIndex(of: 0x0A) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                if line.contains(marker) {
                    drain(fd)
                    return line
                }
                earlier.append(line)
            }
        }
        throw RuntimeError("\(name) did not print '\(marker)' within \(Int(timeout)) s; it said: \(earlier.joined(separator: " | "))")
    }

    private func drain(_ fd: Int32) {
        startThread(name: "\(name)-stderr") {
            var sink = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = read(fd, &sink, sink.count)
                if n > 0 || (n < 0 && errno == EINTR) { continue }
                return
            }
        }
    }

    /// Waits up to `timeout` seconds for the child to exit by itself; true if it did.
    func waitForExit(timeout: Double) -> Bool {
        process.waitForExit(timeout: .seconds(timeout)) != nil
    }

    /// SIGTERM, then SIGKILL if it has not exited 3 s later. Safe to call more than once.
    func stop() {
        guard process.isRunning else { return }
        process.send(SIGTERM)
        if waitForExit(timeout: 3) { return }
        process.send(SIGKILL)
        _ = waitForExit(timeout: 3)
    }
}

/// Facts about processes, read from /proc: Linux only. Elsewhere the readers answer nil (and
/// the rss part of the benchmark says it is Linux only) rather than a made-up number.
enum ProcFS {
    /// Whether /proc can be read here.
    static let available = readable("/proc/self/status")

    /// Whether a /proc file can be read: never outside Linux, whatever a path there may hold.
    static func readable(_ path: String) -> Bool {
        #if os(Linux)
        FileManager.default.isReadableFile(atPath: path)
        #else
        false
        #endif
    }

    /// Resident set size (VmRSS) in bytes.
    static func residentBytes(pid: Int32) -> Int? {
        guard available, let status = wholeFile("/proc/\(pid)/status") else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let kilobytes = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Int($0) }
            return kilobytes.map { $0 * 1024 }
        }
        return nil
    }

    /// How many file descriptors the process has open.
    static func openFileCount(pid: Int32) -> Int? {
        guard available, let dir = opendir("/proc/\(pid)/fd") else { return nil }
        defer { closedir(dir) }
        var count = 0
        while let entry = readdir(dir) {
            if entry.pointee.d_name.0 != 0x2E { count += 1 }  // skip . and ..
        }
        return count
    }

    /// Whether a TCP socket in this network namespace listens on `port`, from /proc/net/tcp and
    /// /proc/net/tcp6; nil where /proc cannot say. Asking this way makes no connection, which a
    /// one-test server (iperf3) would take for a client. With `host` (an IPv4 address), only a
    /// listener there or on 0.0.0.0 counts: another address's socket may have the same port
    /// number (a test's server on 127.0.0.2 or ::1 was taken for iperf3's on 127.0.0.1).
    static func isListening(port: Int, on host: String? = nil) -> Bool? {
        let tables = (host == nil ? ["/proc/net/tcp", "/proc/net/tcp6"] : ["/proc/net/tcp"]).compactMap(wholeFile)
        guard available, !tables.isEmpty else { return nil }
        let suffix = ":" + String(format: "%04X", port)
        let addresses = host.flatMap(procAddress).map { [$0 + suffix, "00000000" + suffix] }
        for table in tables {
            for line in table.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                // sl, local_address, rem_address, st: 0A is LISTEN.
                guard fields.count > 3, fields[1].hasSuffix(suffix), fields[3] == "0A" else { continue }
                if addresses?.contains(String(fields[1])) ?? true { return true }
            }
        }
        return false
    }

    /// An IPv4 address as /proc/net/tcp writes it: the address's 32 bits printed as the machine
    /// holds them (`0100007F` for 127.0.0.1 on x86).
    static func procAddress(_ host: String) -> String? {
        var address = in_addr()
        guard inet_pton(AF_INET, host, &address) == 1 else { return nil }
        return String(format: "%08X", address.s_addr)
    }

    /// A /proc file read to its end with read(2). Foundation's readers trust the size stat(2)
    /// gives, which /proc reports as 0, and return only the first chunk of a large file (a
    /// /proc/net/tcp of a few hundred sockets lost its later lines).
    static func wholeFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = read(fd, &chunk, chunk.count)
            if n > 0 { bytes += chunk[..<n]; continue }
            if n < 0 && errno == EINTR { continue }
            return n == 0 ? String(decoding: bytes, as: UTF8.self) : nil
        }
    }

    /// The running executable (so children run exactly this build).
    static func executablePath() -> String {
        // /proc/self/exe on Linux; elsewhere (no /proc) Foundation's answer.
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return Bundle.main.executablePath ?? CommandLine.arguments[0] }
        return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The first executable called `name` on PATH.
    static func findOnPath(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let candidate = "\(dir)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }
}
