import Foundation
import NetsimCore
import NetsimHTTP
import NetsimLoopback
import Testing

/// The urllib3 reference driver (Fixtures/clients/urllib3_client.py) against the built-in server,
/// speaking the exec protocol of docs/drivers.md.
@Suite("urllib3 reference driver", .serialized)
struct ReferenceDriverTests {
    static let script = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/clients/urllib3_client.py").path

    static func startDriver(timeout: Double, retries: Int? = 0) async throws -> DriverProcess {
        let driver = try DriverProcess(executable: "/usr/bin/env", arguments: ["python3", script])
        // The protocol's order (docs/drivers.md): config is on stdin before the client says hello;
        // the client builds itself from it first.
        try driver.send([
            "type": "config", "timeout": timeout, "connect_timeout": 2.0, "pool": 4,
            "retries": retries.map { $0 as Any } ?? NSNull(), "settings": [String: Any](),
        ])
        let hello = await driver.nextObject()
        #expect(hello?["type"] as? String == "hello", "driver log: \(driver.log)")
        #expect(hello?["name"] as? String == "urllib3")
        #expect(hello?["protocol"] as? Int == 1)
        return driver
    }

    static func request(_ id: Int, _ url: String, method: String = "GET", body: String? = nil) -> [String: Any] {
        ["type": "request", "id": id, "method": method, "url": url, "headers": ["Accept": "*/*"], "body": body ?? NSNull()]
    }

    /// Settings come as text (docs/drivers.md): `block: false` is no blocking and `verify: false`
    /// no verification. Read as `bool("false")`, block was on; compared with `is False`, verify
    /// was never off (QA 62). A value that is neither is an error, not a default.
    @Test func yesNoSettingsAreReadAsTheTextTheyCome() async throws {
        func configured(_ settings: [String: String]) async throws -> DriverProcess {
            let driver = try DriverProcess(executable: "/usr/bin/env", arguments: ["python3", Self.script])
            try driver.send(["type": "config", "timeout": 2.0, "pool": 2, "retries": 0, "settings": settings])
            return driver
        }
        let off = try await configured(["block": "false", "verify": "false"])
        #expect(await off.nextObject()?["type"] as? String == "hello", "\(off.log)")
        #expect(off.log.contains("block=False") && off.log.contains("cert_reqs='CERT_NONE'"), "\(off.log)")
        _ = await off.finish()
        let on = try await configured(["block": "True", "verify": "true"])
        #expect(await on.nextObject()?["type"] as? String == "hello", "\(on.log)")
        #expect(on.log.contains("block=True") && !on.log.contains("CERT_NONE"), "\(on.log)")
        _ = await on.finish()
        let unreadable = try await configured(["block": "maybe"])
        #expect(await unreadable.nextObject(timeout: .seconds(20)) == nil)
        #expect(unreadable.log.contains("settings.block: 'maybe' is neither true nor false"), "\(unreadable.log)")
        _ = await unreadable.finish()
    }

    @Test func answersReportStatusBodyDigestAndTheRealLocalPortOfPooledConnections() async throws {
        let routes = [
            HTTPRoute(path: "/feed", headers: [HTTPHeader("Content-Type", "text/plain")], body: .text("the feed")),
            HTTPRoute(path: "/slow", body: .text("slow"), delay: .milliseconds(800)),
            HTTPRoute(path: "/slow-big", body: .generated(bytes: 100_000), delay: .milliseconds(800)),
            HTTPRoute(method: "POST", path: "/echo", status: 201),
        ]
        try await withServer(routes) { server, endpoint in
            let base = "http://\(endpoint)"
            let driver = try await Self.startDriver(timeout: 10)
            try driver.send(Self.request(1, base + "/feed"))
            let first = await driver.answers(1)
            // Two at once: both are in flight together, so they need two connections.
            try driver.send(Self.request(2, base + "/slow"))
            try driver.send(Self.request(3, base + "/slow-big"))
            let parallel = await driver.answers(2)
            try driver.send(Self.request(4, base + "/missing?x=1"))
            try driver.send(Self.request(5, base + "/echo", method: "POST", body: "héllo"))
            let last = await driver.answers(2)
            #expect(await driver.finish() == 0)
            let answers = first.merging(parallel) { a, _ in a }.merging(last) { a, _ in a }
            #expect(answers.keys.sorted() == [1, 2, 3, 4, 5], "driver log: \(driver.log)")
            guard answers.count == 5 else { return }

            #expect(answers[1]?["status"] as? Int == 200)
            #expect(answers[1]?["body"] as? String == "the feed")
            #expect(answers[1]?["body_sha256"] as? String == sha256Hex(Array("the feed".utf8)))
            #expect((answers[1]?["headers"] as? [String: String])?["content-type"] == "text/plain")
            #expect(answers[1]?["error"] is NSNull)
            #expect(answers[3]?["body_length"] as? Int == 100_000)
            #expect(answers[3]?["body_sha256"] as? String == sha256Hex(BuiltinServer.generatedBody(bytes: 100_000)))
            #expect(answers[4]?["status"] as? Int == 404)
            #expect(answers[5]?["status"] as? Int == 201)
            #expect((answers[2]?["elapsed"] as? Double ?? 0) >= 0.8)

            // local_port is the port the server saw the request come from.
            let requests = server.requests
            #expect(requests.map(\.path).first == "/feed")
            #expect(Set(requests.map(\.path)) == ["/feed", "/slow", "/slow-big", "/missing", "/echo"])
            #expect(requests.first { $0.path == "/echo" }?.bodyBytes == 6)  // "héllo" in UTF-8
            for request in requests {
                let id = ["/feed": 1, "/slow": 2, "/slow-big": 3, "/missing": 4, "/echo": 5][request.path]!
                let reported = answers[id]?["local_port"] as? Int
                #expect(reported != nil && reported == server.peerAddress(ofConnection: request.connection)?.port,
                        "request \(id) on server connection \(request.connection)")
            }
            // Keep-alive: five requests, two connections, the first one reused from the pool.
            let ports = [1, 2, 3, 4, 5].compactMap { answers[$0]?["local_port"] as? Int }
            #expect(Set(ports).count == 2)
            #expect(answers[2]?["local_port"] as? Int != answers[3]?["local_port"] as? Int)
            #expect(Set(ports[1...2]).contains(ports[0]))
            #expect(Set(requests.map(\.connection)) == [1, 2])
            #expect(requests.filter(\.reusedConnection).count == 3)
        }
    }

    @Test func failuresAreReportedWithTheirKind() async throws {
        // Refused: a port bound but not listening (so no other test's server can take it).
        let refusing = try RefusingPort()
        let closedPort = refusing.port
        // Reset and closed-before-response: servers that read the request, then RST or FIN.
        let resetting = try LoopbackServer { socket in
            _ = try? socket.receive(timeout: .seconds(5))
            socket.reset()
        }
        let closing = try LoopbackServer { socket in
            _ = try? socket.receive(timeout: .seconds(5))
            socket.shutdownWrite()
            _ = try? socket.receive(timeout: .seconds(5))
            socket.close()
        }
        defer {
            resetting.stop()
            closing.stop()
            withExtendedLifetime(refusing) {}
        }
        try await withServer([HTTPRoute(path: "/hang", delay: .seconds(20))]) { _, endpoint in
            let driver = try await Self.startDriver(timeout: 2)
            try driver.send(Self.request(1, "http://127.0.0.1:\(closedPort)/"))
            try driver.send(Self.request(2, "http://\(resetting.endpoint)/"))
            try driver.send(Self.request(3, "http://\(closing.endpoint)/"))
            try driver.send(Self.request(4, "http://\(endpoint)/hang"))
            let answers = await driver.answers(4)
            #expect(await driver.finish() == 0)
            func kind(_ id: Int) -> String? { (answers[id]?["error"] as? [String: Any])?["kind"] as? String }
            #expect(kind(1) == "refused", "driver log: \(driver.log)")
            #expect(kind(2) == "reset", "\(answers[2] ?? [:])")
            #expect(kind(3) == "closed-before-response")
            #expect(kind(4) == "timeout")
            for id in 1...4 {
                #expect(answers[id]?["status"] is NSNull)
                #expect(((answers[id]?["error"] as? [String: Any])?["message"] as? String)?.isEmpty == false)
            }
            #expect(answers[1]?["local_port"] is NSNull)
            #expect(answers[4]?["local_port"] is Int, "a failed attempt still reports its connection")
        }
    }
}
