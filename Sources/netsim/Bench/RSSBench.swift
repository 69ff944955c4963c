import Foundation
import NetsimCore
import NetsimRelay
import NetsimLoopback

/// Part 5: the memory of a `netsim relay` process holding many idle connections.
///
/// The relay runs as a child process (this executable, `netsim relay`), its upstream is another
/// child (`netsim _hold`), and the clients are sockets of this process, so the relay's resident
/// set contains nothing but the relay.
enum RSSBench {
    /// Open files the relay needs besides its connections (listener, epoll, eventfds, timers,
    /// stdio): what its default connection limit leaves, so the relay child takes all N.
    static let reservedFiles = UInt64(Relay.reservedDescriptors)

    static func run(_ settings: BenchSettings) async throws -> BenchSection {
        guard ProcFS.available else {
            throw RuntimeError("the rss part reads the relay's memory and open files from /proc: Linux only")
        }
        return try await offload { try measure(settings) }
    }

    private static func measure(_ settings: BenchSettings) throws -> BenchSection {
        let capacity = Int((settings.fileLimit - min(settings.fileLimit, reservedFiles)) / 2)
        let count = max(1, min(settings.connections, capacity))
        let executable = ProcFS.executablePath()

        let hold = try ChildProcess(
            name: "netsim _hold", executable: executable,
            arguments: ["_hold", "--listen", "127.0.0.1:0", "--duration", "600s"], captureStandardError: true)
        defer { hold.stop() }
        let holdAddress = try address(in: try hold.waitForLine(containing: "netsim _hold:", timeout: 15), after: "netsim _hold: ")

        let relay = try ChildProcess(
            name: "netsim relay", executable: executable,
            arguments: ["relay", "--upstream", holdAddress.description, "--listen", "127.0.0.1:0", "--duration", "600s"],
            captureStandardError: true)
        defer { relay.stop() }
        let relayAddress = try address(in: try relay.waitForLine(containing: "netsim relay:", timeout: 15), after: "netsim relay: ")

        let idle = stableResidentBytes(pid: relay.pid, timeout: 10)
        guard let idle, let baseFiles = ProcFS.openFileCount(pid: relay.pid) else {
            throw RuntimeError("cannot read /proc/\(relay.pid): the relay child has gone")
        }

        // Connect the clients, then wait until the relay has connected every one upstream.
        var clients: [BlockingSocket] = []
        clients.reserveCapacity(count)
        defer { for client in clients { client.close() } }
        let connectStart = monotonicSeconds()
        for _ in 0..<count {
            guard monotonicSeconds() - connectStart < 120 else {
                throw RuntimeError("connecting \(count) clients took over 120 s (\(clients.count) connected)")
            }
            clients.append(try BlockingSocket.connect(to: relayAddress))
        }
        let connectSeconds = monotonicSeconds() - connectStart
        let wantedFiles = baseFiles + 2 * count
        let acceptDeadline = monotonicSeconds() + 60
        var files = ProcFS.openFileCount(pid: relay.pid) ?? 0
        while files < wantedFiles, monotonicSeconds() < acceptDeadline {
            usleep(100_000)
            files = ProcFS.openFileCount(pid: relay.pid) ?? 0
        }
        guard files >= wantedFiles else {
            throw RuntimeError("the relay holds \(files - baseFiles) connection files after 60 s, expected \(2 * count)")
        }
        guard let loaded = stableResidentBytes(pid: relay.pid, timeout: 20) else {
            throw RuntimeError("cannot read the relay's memory: the child has gone")
        }

        let perConnection = Double(loaded - idle) / Double(count)
        let extrapolated = Double(idle) + perConnection * 10_000
        var section = BenchSection()
        section.rows.append(.info("relay RSS, idle (netsim relay child process)", Format.megabytes(Double(idle))))
        section.rows.append(.info(
            "relay RSS with \(Format.count(count)) idle connections",
            "\(Format.megabytes(Double(loaded))) (connected in \(Format.fixed(connectSeconds, 1)) s)"))
        section.rows.append(.info("relay memory per 1,000 connections", Format.megabytes(perConnection * 1000)))
        section.rows.append(BenchRow(
            measurement: count == 10_000 ? "relay RSS at 10,000 connections" : "relay RSS at 10,000 connections (extrapolated)",
            result: Format.megabytes(count == 10_000 ? Double(loaded) : extrapolated),
            target: "≤ 150 MB",
            verdict: Verdict.atMost((count == 10_000 ? Double(loaded) : extrapolated) / 1e6, 150) { Format.fixed($0, 1) + " MB" }))
        if count < settings.connections {
            section.notes.append(
                "RSS: each relayed connection costs the relay 2 file descriptors and the hard limit here is \(settings.fileLimit), "
                    + "so it holds N = min(\(settings.connections), (\(settings.fileLimit) − \(reservedFiles)) / 2) = \(count); "
                    + "10,000 is idle RSS + 10 × the measured MB per 1,000.")
        }
        section.notes.append(
            "RSS is VmRSS from /proc/PID/status of the relay child, idle and after it has connected all \(Format.count(count)) "
                + "connections upstream (its open files reach 2 per connection) and its RSS is stable.")
        return section
    }

    /// Parses `HOST:PORT` from a status line such as `netsim relay: 127.0.0.1:41234 → 127.0.0.1:80`.
    private static func address(in line: String, after prefix: String) throws -> Endpoint {
        guard let range = line.range(of: prefix) else { throw RuntimeError("unexpected status line: \(line)") }
        let text = line[range.upperBound...].split(separator: " ").first.map(String.init) ?? ""
        do {
            return try Endpoint(parsing: text)
        } catch {
            throw RuntimeError("cannot read an address from the status line '\(line)': \(error)")
        }
    }

    /// VmRSS once five readings 200 ms apart agree within 0.5% (or the last reading at `timeout`).
    private static func stableResidentBytes(pid: Int32, timeout: Double) -> Int? {
        let deadline = monotonicSeconds() + timeout
        var readings: [Int] = []
        while true {
            guard let rss = ProcFS.residentBytes(pid: pid) else { return nil }
            readings.append(rss)
            let recent = readings.suffix(5)
            if recent.count == 5, let low = recent.min(), let high = recent.max(), Double(high - low) <= 0.005 * Double(high) {
                return rss
            }
            if monotonicSeconds() >= deadline { return rss }
            usleep(200_000)
        }
    }
}
