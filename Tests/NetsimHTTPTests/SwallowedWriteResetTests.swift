import Foundation
import NetsimLoopback
import Testing

/// urllib3 and httpcore swallow ECONNRESET/EPIPE while they write a request (a server may
/// answer early and close) and then read, which sees only the end of the stream. A reset that
/// lands before the request is written therefore looks like a FIN before any answer; the
/// adapters keep the swallowed error and call it the reset it was. A driver-check run once
/// classified `reject`'s reset as closed-before-response when, under load, the reset beat the
/// write; here a 32 MiB upload to a server that resets on accept makes that order certain
/// (the body cannot all fit in the socket buffers before the reset comes back).
@Suite("python adapters: a reset hidden behind a swallowed write error")
struct SwallowedWriteResetTests {
    static let clients = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/clients")

    @Test(arguments: ["urllib3_client.py", "httpx_client.py"])
    func anUploadResetOnAcceptIsAReset(_ script: String) async throws {
        let resetting = try LoopbackServer { socket in socket.reset() }
        defer { resetting.stop() }
        let driver = try DriverProcess(executable: "/usr/bin/env",
                                       arguments: ["python3", Self.clients.appendingPathComponent(script).path])
        try driver.send(["type": "config", "timeout": 10.0, "connect_timeout": 5.0, "pool": NSNull(),
                         "retries": 0, "settings": [String: Any]()])
        let hello = await driver.nextObject()
        #expect(hello?["type"] as? String == "hello", "driver log: \(driver.log)")
        // Building and encoding the 32 MiB request takes a second of CPU in a debug build: off the
        // cooperative pool, which every other test (and their relays' tasks) share.
        let url = "http://\(resetting.endpoint)/upload"
        try await offload {
            try driver.send(["type": "request", "id": 1, "method": "POST", "url": url,
                             "headers": [String: String](), "body": String(repeating: "x", count: 32 << 20)])
        }
        let answer = await driver.answers(1)[1]
        #expect(await driver.finish() == 0)
        let error = answer?["error"] as? [String: Any]
        #expect(error?["kind"] as? String == "reset", "\(error ?? [:]) — driver log: \(driver.log)")
        // When the library said end of stream, the message also names the swallowed write error
        // behind the kind. (On a loaded machine the reset can come before the client's connect
        // has returned — "Failed to establish a new connection: [Errno 104]" — a reset plainly.)
        let message = error?["message"] as? String ?? ""
        if message.contains("RemoteDisconnected") || message.contains("Server disconnected") {
            #expect(message.contains("writing the request met"), "\(error ?? [:])")
        }
    }
}
