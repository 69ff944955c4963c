import Foundation
import NetsimCore
import NetsimLoopback
import Testing
@testable import netsim

/// The real `netsim relay` process, as a person runs it.
@Suite("netsim relay, the process", .serialized)
struct RelayProcessTests {

    /// Starts `netsim ARGUMENTS`.
    static func start(_ arguments: [String]) throws -> WatchedProcess {
        try WatchedProcess(NetsimProcess.executable, arguments)
    }

    /// The port from the status line `netsim relay: HOST:PORT → …` on stderr, once printed.
    static func boundPort(_ relay: WatchedProcess) async throws -> Int {
        let line = try await relay.line(.error, within: .seconds(10)) { $0.hasPrefix("netsim relay: ") && $0.contains(" → ") }
        guard let address = line.dropFirst("netsim relay: ".count).split(separator: " ").first,
              let port = Int(address.split(separator: ":").last ?? "")
        else { throw SocketFailure.other(errno: EINVAL) }
        return port
    }

    @Test func relaysWithLatencyAndWritesTheEventLog() async throws {
        let server = try LoopbackServer.echo()
        defer { server.stop() }
        let events = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-events-\(UUID()).jsonl")
        defer { try? FileManager.default.removeItem(at: events) }
        let relay = try Self.start([
            "relay", "--upstream", server.endpoint.description, "--latency", "20ms",
            "--events", events.path, "--duration", "60s", "--seed", "18446744073709551615",
        ])
        let port = try await Self.boundPort(relay)
        let rtt = try await offload { () -> Double in
            let socket = try BlockingSocket.connect(to: Endpoint(host: "127.0.0.1", port: port))
            let start = Date()
            try socket.send("hello")
            _ = try socket.receive(exactly: 5)
            let rtt = Date().timeIntervalSince(start)
            socket.shutdownWrite()
            _ = try socket.receiveToEnd()
            return rtt
        }
        #expect(rtt >= 0.04, "20 ms each way, was \(rtt)")
        relay.terminate()  // SIGTERM: the relay closes what is open and writes the rest of the log
        #expect(await relay.exit(within: .seconds(10)) == 0)
        let lines = try String(contentsOf: events, encoding: .utf8).split(separator: "\n")
        let names = try lines.map { line -> String in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            return object?["event"] as? String ?? "?"
        }
        // The seed first, so the log alone says how to reproduce it (the largest seed, whole).
        #expect(lines.first?.hasSuffix(#""event":"seed","seed":18446744073709551615}"#) == true, "\(lines.first ?? "")")
        #expect(names.dropFirst().first == "listening")
        #expect(["opened", "upstream_connected", "bytes", "half_closed", "closed"].allSatisfy(names.contains))
    }

    /// Out of descriptors (`ulimit -n 48` under `--max-connections 1000`): an accept that fails
    /// pauses the listener for a second, each pause a `listener_paused` event, instead of being
    /// retried at once. Before, the listening socket stayed readable and the relay spun a core
    /// retrying (5 s of CPU in 6.5 s with 84 clients queued), silently.
    ///
    /// While it waits, the process has descriptors free (its ``DescriptorReserve``, given back).
    /// Before, its table stayed full, and libdispatch, failing to open /proc for its thread
    /// monitor, could kill it with SIGILL at any second (once in a batch). Under load the upstream
    /// connects of connections accepted just before the pause took the reserve (CI: 48 of 48
    /// during both pauses); they now wait for the listener to resume. Overload then alternates
    /// accepts and pauses, and standard error warns once a minute, not once an alternation
    /// (32 of 32 passed, 4 at a time beside two CPU burners).
    @Test func acceptsFailingForWantOfDescriptorsWaitASecond() async throws {
        let server = try LoopbackServer.echo()
        defer { server.stop() }
        let relay = try WatchedProcess(URL(fileURLWithPath: "/bin/sh"), [
            "-c", "ulimit -n 48 && exec \"$0\" \"$@\"", NetsimProcess.executable.path,
            "relay", "--upstream", server.endpoint.description, "--max-connections", "1000", "--events", "-", "--duration", "60s",
        ])
        let port = try await Self.boundPort(relay)
        // 40 clients: the relay runs out of its 48 descriptors after about a dozen connections,
        // and the rest wait in its listen queue while it retries.
        let clients = try await offload { try (0..<40).map { _ in try BlockingSocket.connect(to: Endpoint(host: "127.0.0.1", port: port)) } }
        defer { for client in clients { client.close() } }
        var failures: [Double] = []
        while failures.count < 2, let line = await relay.nextLine(.output, within: .seconds(10)) {
            guard line.contains("\"listener_paused\""), line.contains("accept failed") else { continue }
            #expect(line.contains("accept failed: too many open files (errno 24); accepting again in 1 s"), "\(line)")
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            failures.append(object?["t"] as? Double ?? -1)
            // The pause lasts 1 s from the failure, logged after the reserve was given back.
            let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(relay.processIdentifier)/fd").count) ?? 48
            #expect(open < 48, "the relay holds \(open) of its 48 descriptors while it waits for one")
        }
        #expect(failures.count == 2, "two failed accepts in the event log: \(relay.text(.error))")
        if failures.count == 2 { #expect(failures[1] - failures[0] >= 0.95, "the second accept was tried \(failures[1] - failures[0]) s after the first failed") }
        // Clients leaving free descriptors: the next accept succeeds, and that end of the
        // pauses is logged (QA 37: each pause was, and their end was not).
        for client in clients { client.close() }
        let resumed = try? await relay.line(.output, within: .seconds(15)) { $0.contains("\"listener_resumed\"") }
        #expect(resumed?.contains("an accept succeeded again after descriptors ran out") == true, "\(resumed ?? "no listener_resumed")")
        // One warning on standard error for the episode; each retry is in the event log only.
        #expect(relay.text(.error).components(separatedBy: "listener paused: accept failed").count - 1 == 1, "\(relay.text(.error))")
        relay.terminate()
        #expect(await relay.exit(within: .seconds(10)) == 0, "\(relay.text(.error))")
        #expect(relay.text(.error).contains("connections: at most 1000, but the open-file limit 48 leaves room for 1 (2 descriptors each"), "\(relay.text(.error))")
    }

    /// `--events FILE` is written as the relay runs (flushed every second), not only at its end:
    /// `tail -F` sees a connection's `closed` while the relay still runs, and after a `kill -9`
    /// the file still holds it. Before, the file stayed empty until a clean stop.
    @Test func theEventFileIsWrittenWhileTheRelayRuns() async throws {
        let server = try LoopbackServer.echo()
        defer { server.stop() }
        let events = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-live-\(UUID()).jsonl")
        defer { try? FileManager.default.removeItem(at: events) }
        let relay = try Self.start(["relay", "--upstream", server.endpoint.description, "--events", events.path, "--duration", "60s"])
        let port = try await Self.boundPort(relay)
        try await offload {
            let socket = try BlockingSocket.connect(to: Endpoint(host: "127.0.0.1", port: port))
            try socket.send("hello")
            _ = try socket.receive(exactly: 5)
            socket.close()
        }
        let tail = try WatchedProcess(URL(fileURLWithPath: "/usr/bin/tail"), ["-n", "+1", "-F", events.path])
        let closed = try? await tail.line(.output, within: .seconds(10)) { $0.contains("\"event\":\"closed\"") }
        #expect(closed != nil, "no closed event in the file while the relay runs: \(tail.text(.output))")
        tail.terminate()
        kill(relay.processIdentifier, SIGKILL)
        _ = await relay.exit(within: .seconds(10))
        let written = (try? String(contentsOf: events, encoding: .utf8)) ?? ""
        #expect(written.contains("\"event\":\"opened\"") && written.contains("\"event\":\"closed\""), "after kill -9: \(written)")
    }

    /// SIGHUP too (the terminal closed): its default action cut the capture mid-packet.
    @Test(arguments: [SIGINT, SIGTERM, SIGHUP])
    func stopsCleanlyOnASignal(_ sig: Int32) async throws {
        let relay = try Self.start(["relay", "--upstream", "127.0.0.1:9"])
        _ = try await Self.boundPort(relay)
        kill(relay.processIdentifier, sig)
        #expect(await relay.exit(within: .seconds(5)) == 0)
    }

    @Test func stopsByItselfAfterTheDuration() async throws {
        let result = try await Self.start(["relay", "--upstream", "127.0.0.1:9", "--duration", "1s"]).result(within: .seconds(10))
        #expect(result.status == 0)
        #expect(result.standardError.contains("stopping after 1s"), "\(result.standardError)")
        #expect(result.standardError.hasSuffix("netsim relay: stopped\n"), "\(result.standardError)")
    }

    /// An HTTP/2 fault on a relay that does not intercept TLS can never act: the status says so
    /// (QA 39: `--fault goaway` was accepted and did nothing, without a word).
    @Test func anHTTP2FaultWithoutInterceptionIsNoted() async throws {
        let result = try await Self.start(["relay", "--upstream", "127.0.0.1:9", "--fault", "goaway", "--fault", "rst", "--duration", "1s"]).result(within: .seconds(10))
        #expect(result.status == 0)
        #expect(result.standardError.contains("note: goaway acts on HTTP/2 the relay intercepts; without --tls intercept it does nothing"), "\(result.standardError)")
        #expect(!result.standardError.contains("note: rst"), "\(result.standardError)")
    }

    @Test func aBadFlagExitsWithAUsageError() async throws {
        let result = try await Self.start(["relay", "--upstream", "127.0.0.1:9", "--loss", "2"]).result(within: .seconds(10))
        #expect(result.status == 64)
        #expect(result.standardError.contains("'2' is not a percentage; write it as a percentage from 0% to 100%: 2%, 0.5%, 100%"))
    }

    /// `serve --host 127.1` is loopback, as `--listen 127.1:0` is (QA 50: refused without a token).
    @Test func serveReadsShorthandLoopbackAsLoopback() throws {
        let serve = try ServeCommand.parse(["--host", "127.1", "--port", "0"])
        #expect(serve.host == "127.0.0.1" && ServeCommand.isLoopback(serve.host))
    }

    @Test func onlyNonLoopbackListenersWarn() {
        let upstream = Endpoint(host: "127.0.0.1", port: 80)
        #expect(RelayCommand.exposureWarning(listen: Endpoint(host: "127.0.0.1", port: 0), upstream: upstream) == nil)
        #expect(RelayCommand.exposureWarning(listen: Endpoint(host: "::1", port: 0), upstream: upstream) == nil)
        let warning = RelayCommand.exposureWarning(listen: Endpoint(host: "0.0.0.0", port: 8080), upstream: upstream)
        #expect(warning?.contains("NOT a loopback address") == true)
    }
}

/// Every listening command says a taken port the same way, naming its option: `netsim replay`
/// and `netsim serve` printed SwiftNIO's `bind(descriptor:ptr:bytes:): Address already in use)
/// (errno: 98)`.
@Suite("a taken port")
struct TakenPortTests {
    @Test func everyListeningCommandNamesItsOptionAndSaysThePortIsInUse() async throws {
        let taken = try LoopbackServer.echo()
        defer { taken.stop() }
        let port = "\(taken.endpoint.port)"
        let commands: [([String], String)] = [
            (["relay", "--listen", "127.0.0.1:\(port)", "--upstream", "127.0.0.1:9"], "--listen 127.0.0.1:\(port): cannot listen: address already in use"),
            (["proxy", "--listen", "127.0.0.1:\(port)"], "--listen 127.0.0.1:\(port): cannot listen: address already in use"),
            (["replay", "Fixtures/pcap/zeek-http-get.pcap", "--listen", "127.0.0.1:\(port)"], "--listen 127.0.0.1:\(port): cannot listen: address already in use"),
            (["serve", "--port", port], "--host 127.0.0.1 --port \(port): cannot listen on 127.0.0.1:\(port): address already in use"),
        ]
        for (arguments, said) in commands {
            let result = try await NetsimProcess.run(arguments + ["--duration", "5s"], timeout: .seconds(30))
            #expect(result.status == 1, "\(arguments[0]): \(result.stderr)")
            #expect(result.stderr.contains(said), "\(arguments[0]): \(result.stderr)")
        }
    }

    /// A relay that cannot start leaves the files it would write as they were: it truncated
    /// `--events` and `--pcap` first, and a rerun on a taken port wiped the last run's.
    @Test func aRelayThatCannotStartLeavesItsFilesAlone() async throws {
        let taken = try LoopbackServer.echo()
        defer { taken.stop() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-keep-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let events = folder.appendingPathComponent("prev.jsonl").path
        let pcap = folder.appendingPathComponent("prev.pcap").path
        try Data("the last run\n".utf8).write(to: URL(fileURLWithPath: events))
        try Data("the last capture".utf8).write(to: URL(fileURLWithPath: pcap))
        let result = try await NetsimProcess.run(["relay", "--listen", taken.endpoint.description, "--upstream", "127.0.0.1:9",
                                                  "--events", events, "--pcap", pcap, "--duration", "5s"], timeout: .seconds(30))
        #expect(result.status == 1 && result.stderr.contains("cannot listen: address already in use"), "\(result.stderr)")
        #expect(try String(contentsOfFile: events, encoding: .utf8) == "the last run\n")
        #expect(try String(contentsOfFile: pcap, encoding: .utf8) == "the last capture")
    }

    /// `--events` on a FIFO nobody reads yet: the wait is said, and the first Ctrl-C ends it
    /// (QA 67: open(2) blocked before the banner, silent, and only a second Ctrl-C ended it).
    @Test func aFIFOWithoutAReaderIsWaitedOnAndCtrlCEndsTheWait() async throws {
        let fifo = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-fifo-\(UUID())").path
        guard mkfifo(fifo, 0o600) == 0 else { throw POSIXError(.EIO) }
        defer { try? FileManager.default.removeItem(atPath: fifo) }
        let relay = try WatchedProcess(NetsimProcess.executable, ["relay", "--upstream", "127.0.0.1:9", "--events", fifo, "--duration", "60s"])
        defer { relay.terminate() }
        _ = try await relay.line(.error, within: .seconds(30)) { $0.contains("--events \(fifo): a FIFO; waiting for a reader to open it") }
        kill(relay.processIdentifier, SIGINT)
        #expect(await relay.exit(within: .seconds(10)) == 130, "\(relay.text(.error))")
        #expect(relay.text(.error).contains("SIGINT while waiting for a reader; nothing started"), "\(relay.text(.error))")
    }

    /// An upstream name that does not resolve is the upstream's fault: it was blamed on
    /// `--listen 127.0.0.1:0: cannot listen`. (`.invalid` never resolves: RFC 6761.)
    @Test func anUpstreamThatDoesNotResolveIsNamedAsSuch() async throws {
        let result = try await NetsimProcess.run(["relay", "--upstream", "nonexistent.invalid:80", "--duration", "5s"], timeout: .seconds(30))
        #expect(result.status == 1)
        #expect(result.stderr.contains("--upstream nonexistent.invalid:80: the name nonexistent.invalid does not resolve"), "\(result.stderr)")
        #expect(!result.stderr.contains("--listen"), "\(result.stderr)")
    }
}
