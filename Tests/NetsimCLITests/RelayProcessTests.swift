import Foundation
import NetsimCore
import NetsimLoopback
import Testing
@testable import netsim

/// The real `netsim relay` process, as a person runs it.
@Suite("netsim relay, the process", .serialized)
struct RelayProcessTests {

    final class Running: @unchecked Sendable {
        let process = Process()
        let stderr = Pipe()

        init(_ arguments: [String]) throws {
            process.executableURL = NetsimProcess.executable
            process.arguments = arguments
            process.standardError = stderr
            process.standardOutput = FileHandle.nullDevice
            try process.run()
        }

        /// Reads stderr until the status line `netsim relay: HOST:PORT → …` and returns the port.
        func boundPort() throws -> Int {
            var text = ""
            let handle = stderr.fileHandleForReading
            while !text.contains(" → ") || !text.contains("\n") {
                let data = handle.availableData
                if data.isEmpty { break }
                text += String(decoding: data, as: UTF8.self)
            }
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("netsim relay: ") }),
                  let address = line.dropFirst("netsim relay: ".count).split(separator: " ").first,
                  let port = Int(address.split(separator: ":").last ?? "")
            else { throw SocketFailure.other(errno: EINVAL) }
            return port
        }

        func waitForExit(timeout: Double = 10) -> Int32? {
            let deadline = Date(timeIntervalSinceNow: timeout)
            while process.isRunning, Date() < deadline { usleep(10_000) }
            if process.isRunning {
                process.terminate()
                return nil
            }
            return process.terminationStatus
        }
    }

    @Test func relaysWithLatencyAndWritesTheEventLog() async throws {
        let server = try LoopbackServer.echo()
        defer { server.stop() }
        let events = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-events-\(UUID()).jsonl")
        defer { try? FileManager.default.removeItem(at: events) }
        let relay = try Running([
            "relay", "--upstream", server.endpoint.description, "--latency", "20ms",
            "--events", events.path, "--duration", "2s",
        ])
        let (rtt, status) = try await offload { () -> (Double, Int32?) in
            let socket = try BlockingSocket.connect(to: Endpoint(host: "127.0.0.1", port: try relay.boundPort()))
            let start = Date()
            try socket.send("hello")
            _ = try socket.receive(exactly: 5)
            let rtt = Date().timeIntervalSince(start)
            socket.shutdownWrite()
            _ = try socket.receiveToEnd()
            return (rtt, relay.waitForExit())
        }
        #expect(rtt >= 0.04, "20 ms each way, was \(rtt)")
        #expect(status == 0)
        let lines = try String(contentsOf: events, encoding: .utf8).split(separator: "\n")
        let names = try lines.map { line -> String in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            return object?["event"] as? String ?? "?"
        }
        #expect(names.first == "listening")
        #expect(["opened", "upstream_connected", "bytes", "half_closed", "closed"].allSatisfy(names.contains))
    }

    @Test func stopsCleanlyOnSIGTERM() async throws {
        let relay = try Running(["relay", "--upstream", "127.0.0.1:9"])
        let status = try await offload { () -> Int32? in
            _ = try relay.boundPort()
            relay.process.terminate()  // SIGTERM
            return relay.waitForExit(timeout: 5)
        }
        #expect(status == 0)
    }

    @Test func aBadFlagExitsWithAUsageError() async throws {
        let relay = try Running(["relay", "--upstream", "127.0.0.1:9", "--loss", "2"])
        let (status, text) = try await offload { () -> (Int32?, String) in
            let status = relay.waitForExit(timeout: 10)
            return (status, String(decoding: relay.stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
        }
        #expect(status == 64)
        #expect(text.contains("'2' is not a percentage; write it as a percentage from 0% to 100%: 2%, 0.5%, 100%"))
    }

    @Test func onlyNonLoopbackListenersWarn() {
        let upstream = Endpoint(host: "127.0.0.1", port: 80)
        #expect(RelayCommand.exposureWarning(listen: Endpoint(host: "127.0.0.1", port: 0), upstream: upstream) == nil)
        #expect(RelayCommand.exposureWarning(listen: Endpoint(host: "::1", port: 0), upstream: upstream) == nil)
        let warning = RelayCommand.exposureWarning(listen: Endpoint(host: "0.0.0.0", port: 8080), upstream: upstream)
        #expect(warning?.contains("NOT a loopback address") == true)
    }
}
