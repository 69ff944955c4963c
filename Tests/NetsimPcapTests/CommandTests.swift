import Foundation
import NetsimCore
import NetsimLink
import NetsimLoopback
import NetsimScenario
import Testing
@testable import NetsimPcap

/// `netsim profile`, `netsim replay`, and `--pcap` on `relay`, `run` and `test`, as processes.
@Suite("pcap commands", .serialized)
struct CommandTests {
    /// A scenario around a `link:` block; its last check counts what the replay served (what the
    /// relay carried, for your own server behind `address:`, which netsim does not see).
    static func scenario(name: String, upstream: String, link: String = "link:\n  latency: 5ms") -> String {
        let served = upstream.hasPrefix("address:") ? "- relay:\n      requests: { count: 3 }" : "- server: {}\n    count: 3"
        return """
        name: \(name)
        description: The captured keep-alive exchanges, replayed through the relay.
        seed: 1
        upstream:
          \(upstream)
        \(link)
        client:
          driver: exec
          command: [python3, \(repositoryRoot)/Fixtures/clients/urllib3_client.py]
          timeout: 5s
        timeline:
          - request: css
            path: /style/enhanced.css
          - request: js
            path: /script/urchin.js
          - request: png
            path: /images/template/screen/key-point-top.png
        expect:
          - request: css
            status: 200
          - request: png
            status: 200
          \(served)
        """
    }

    @Test func profileScnPrintsALinkBlockTheScenarioParserAccepts() async throws {
        let (status, stdout, _) = try await runNetsim(["profile", fixture("zeek-http-206_example_c.pcap"), "--scn"])
        #expect(status == 0)
        #expect(stdout.contains("link:") && stdout.contains("latency:") && stdout.contains("down: {"))
        let block = stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.joined(separator: "\n")
        let parsed = try ScenarioParser.parse(source: Self.scenario(name: "inferred", upstream: "address: 127.0.0.1:9", link: block), file: "inferred.scn")
        #expect((20_000_000...25_000_000).contains(parsed.link.down.latency.nanoseconds))
        #expect((parsed.link.down.loss?.averageLoss ?? 0) > 0.01)
        let (_, text, _) = try await runNetsim(["profile", fixture("zeek-http-206_example_c.pcap"), "--flow", "2"])
        #expect(text.contains("flow 2:") && !text.contains("flow 1:"))
        #expect(text.contains("6 retransmissions (2 fast)"))
    }

    @Test func replayServesUntilStoppedAndExitsCleanly() async throws {
        let (process, port) = try await startAnnouncing(["replay", fixture("zeek-http-get.pcap"), "--duration", "30s"], until: "serving", line: "netsim replay: ")
        let plan = try ReplayPlan(capture: Capture.load(path: fixture("zeek-http-get.pcap")))
        let answer = try await offload {
            let socket = try BlockingSocket.connect(to: Endpoint(host: "127.0.0.1", port: port))
            defer { socket.close() }
            try socket.send(plan.exchanges[0].request)
            return try socket.receive(exactly: plan.exchanges[0].response.count)
        }
        #expect(answer == plan.exchanges[0].response)
        process.terminate()  // SIGTERM: a graceful stop
        #expect(await process.exit(within: .seconds(10)) == 0)
    }

    @Test func relayPcapRecordsBothLegs() async throws {
        let server = try LoopbackServer.echo()
        defer { server.stop() }
        let path = temporaryPath("relay.pcap")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (process, port) = try await startAnnouncing(
            ["relay", "--upstream", server.endpoint.description, "--pcap", path, "--events", "-", "--duration", "30s"],
            until: "recording:", line: "netsim relay: ")
        try await offload {
            let socket = try BlockingSocket.connect(to: Endpoint(host: "127.0.0.1", port: port))
            try socket.send("through the relay")
            _ = try socket.receive(exactly: 17)
            socket.shutdownWrite()
            _ = try socket.receiveToEnd()
            socket.close()
        }
        // The relay has seen both FINs once it reports the connection closed (--events -).
        _ = try await process.line(.output, within: .seconds(10)) { $0.contains(#""event":"closed""#) }
        process.terminate()  // SIGTERM: the relay stops and closes the capture
        #expect(await process.exit(within: .seconds(10)) == 0)
        let capture = try Capture.load(path: path)
        #expect(capture.flows.count == 2)
        #expect(capture.flows.allSatisfy { String(decoding: $0.request.bytes, as: UTF8.self) == "through the relay" })
        #expect(try await Tshark.conversations(path).count == 2)
    }

    @Test func aScenarioReplaysACaptureAndRunAndTestRecordIt() async throws {
        let folder = temporaryPath("scenario")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // The capture beside the scenario, named relative to it.
        try FileManager.default.copyItem(atPath: fixture("zeek-http-pipelined-requests.pcap"), toPath: folder + "/pipelined.pcap")
        let file = folder + "/replay.scn"
        try Self.scenario(name: "replay-pipelined", upstream: "replay: pipelined.pcap").write(toFile: file, atomically: true, encoding: .utf8)

        let recording = folder + "/run.pcap"
        let (status, stdout, stderr) = try await runNetsim(["run", file, "--pcap", recording])
        #expect(status == 0, "netsim run: \(stdout)\n\(stderr)")
        let capture = try Capture.load(path: recording)
        #expect(capture.flows.count >= 2 && capture.flows.count % 2 == 0, "two legs per relayed connection")
        #expect(try await Tshark.conversations(recording).count == capture.flows.count)
        let requests = capture.flows.flatMap { flow in (try? ReplayPlan(capture: Capture(path: "", linkTypeName: "", snapshotLength: 0, packetCount: 0, flows: [flow], skipped: [:], truncatedSegments: 0)).exchanges) ?? [] }
        #expect(requests.filter { $0.target == "/script/urchin.js" }.count == 2, "each request shows on both legs")
        #expect(try await Tshark.run(["-r", recording, "-Y", "tcp.analysis.flags and not tcp.analysis.window_update"]).isEmpty)

        let captures = folder + "/captures"
        let (testStatus, testOut, _) = try await runNetsim(["test", file, "--pcap", captures])
        #expect(testStatus == 0, "\(testOut)")
        #expect(FileManager.default.fileExists(atPath: captures + "/replay-pipelined.pcap"))
        #expect(try Capture.load(path: captures + "/replay-pipelined.pcap").flows.count >= 2)
    }
}

/// Starts netsim, waits for a stderr line containing `marker`, and returns the process with the
/// port from the status line starting with `prefix` (`netsim relay: 127.0.0.1:PORT → …`).
private func startAnnouncing(_ arguments: [String], until marker: String, line prefix: String) async throws -> (WatchedProcess, Int) {
    let process = try WatchedProcess(netsimExecutable(), arguments)
    _ = try await process.line(.error, within: .seconds(10)) { $0.contains(marker) }
    let line = try await process.line(.error, within: .seconds(10)) { $0.hasPrefix(prefix) }
    return (process, Int(line.split(separator: " ")[2].split(separator: ":").last ?? "") ?? 0)
}
