import Foundation
import NetsimCore
import NetsimLoopback
import Testing

/// `netsim serve --events`: the proxies made through the API write their events to the file
/// while it runs (QA 66: serve had no event log, which relay and proxy have).
@Suite("netsim serve --events")
struct ServeEventsTests {
    @Test func aProxysConnectionIsInTheFileWhileServeRunsAndItsCloseAtTheEnd() async throws {
        let events = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-serve-\(UUID()).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: events) }
        let echo = try LoopbackServer.echo()
        defer { echo.stop() }
        let serve = try WatchedProcess(NetsimProcess.executable, ["serve", "--port", "0", "--events", events, "--seed", "7", "--duration", "60s"])
        defer { serve.terminate() }
        let line = try await serve.line(.error, within: .seconds(30)) { $0.contains("API on http://") }
        let api = try #require(line.split(separator: "http://").last.map(String.init))
        let created = try await WatchedProcess(URL(fileURLWithPath: "/usr/bin/env"), [
            "curl", "-sS", "-XPOST", "http://\(api)/proxies", "-d", #"{"name":"web","listen":"127.0.0.1:0","upstream":"\#(echo.endpoint)"}"#,
        ]).result(within: .seconds(30))
        let listen = try #require((try? JSONSerialization.jsonObject(with: Data(created.standardOutput.utf8)) as? [String: Any])?["listen"] as? String,
                                  "\(created.standardOutput) \(created.standardError)")
        let proxy = try Endpoint(parsing: listen)
        let echoed = try await offload { () -> [UInt8] in
            let socket = try BlockingSocket.connect(to: proxy)
            defer { socket.close() }
            try socket.send("hello")
            return try socket.receive(exactly: 5)
        }
        #expect(echoed == Array("hello".utf8))
        // Written within about a second while serve runs (polling the other process's file, bounded).
        let deadline = ContinuousClock.now + .seconds(20)
        var text = ""
        while !text.contains(#""proxy":"web","conn":1,"event":"opened""#), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            text = (try? String(contentsOfFile: events, encoding: .utf8)) ?? ""
        }
        #expect(text.contains(#""proxy":"web","conn":1,"event":"opened""#), "\(text)")
        kill(serve.processIdentifier, SIGINT)
        #expect(await serve.exit(within: .seconds(30)) == 0, "\(serve.text(.error))")
        let written = try String(contentsOfFile: events, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(written.first == #"{"t":0.000000,"event":"seed","seed":7}"#, "\(written.first ?? "nothing written")")
        #expect(written.last?.contains(#""proxy":"web","event":"listener_closed""#) == true, "\(written.last ?? "nothing written")")
        #expect(serve.text(.error).contains("seed: 7"), "\(serve.text(.error))")
    }

    /// A serve that cannot listen leaves the file as it was: it is opened after the check.
    @Test func aServeThatCannotListenLeavesTheFileAlone() async throws {
        let taken = try LoopbackServer.echo()
        defer { taken.stop() }
        let events = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-serve-kept-\(UUID()).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: events) }
        try "the last run\n".write(toFile: events, atomically: true, encoding: .utf8)
        let result = try await NetsimProcess.run(["serve", "--port", "\(taken.endpoint.port)", "--events", events, "--duration", "5s"], timeout: .seconds(30))
        #expect(result.status == 1 && result.stderr.contains("address already in use"), "\(result.stderr)")
        #expect(try String(contentsOfFile: events, encoding: .utf8) == "the last run\n")
    }
}
