import Foundation
import NetsimCore
import NetsimLoopback
import Testing
@testable import NetsimService

/// Toxiproxy's `timeout` toxic (netsim's `drop`) acts on its stream only: on `downstream` the
/// request reaches the server and the answer is lost, and the client's close still reaches the
/// server. Before, it was a blackhole both ways: the server saw nothing, not even the close.
@Suite("Toxiproxy API: the timeout toxic")
struct ToxiproxyTimeoutTests {
    final class Seen: @unchecked Sendable {
        private let lock = NSLock()
        private var received: [UInt8] = []
        private var ended = false
        func add(_ bytes: [UInt8]) { lock.withLock { received += bytes } }
        func end() { lock.withLock { ended = true } }
        var snapshot: (received: String, ended: Bool) { lock.withLock { (String(decoding: received, as: UTF8.self), ended) } }
    }

    @Test func onDownstreamTheRequestArrivesTheAnswerIsLostAndTheCloseArrives() async throws {
        let seen = Seen()
        let server = try LoopbackServer { socket in
            while let chunk = try? socket.receive(timeout: .seconds(30)), !chunk.isEmpty {
                seen.add(chunk)
                try? socket.send("answer")
            }
            seen.end()
        }
        defer { server.stop() }
        let api = ToxiproxyAPI(threads: 1)
        let made = await api.handle(APIRequest(method: "POST", uri: "/proxies",
                                               json: #"{"name":"db","listen":"127.0.0.1:0","upstream":"\#(server.endpoint)"}"#))
        let listen = try Endpoint(parsing: try #require(ToxiproxyAPITests.proxy(made)?.listen))
        let added = await api.handle(APIRequest(method: "POST", uri: "/proxies/db/toxics",
                                                json: #"{"type":"timeout","name":"t","stream":"downstream","attributes":{"timeout":0}}"#))
        #expect(added.status == 200, "\(added)")
        let answer = try await offload { () -> [UInt8]? in
            let socket = try BlockingSocket.connect(to: listen)
            defer { socket.close() }
            try socket.send("request")
            let answer = try? socket.receive(timeout: .milliseconds(500))  // a deadline: nothing may come
            socket.shutdownWrite()
            return answer
        }
        #expect(answer == nil, "the answer is dropped: \(String(describing: answer))")
        let deadline = ContinuousClock.now + .seconds(20)
        while !seen.snapshot.ended, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))  // polling the server's view, with a deadline
        }
        await api.shutdown()
        #expect(seen.snapshot.received == "request", "the request reached the server")
        #expect(seen.snapshot.ended, "the client's close reached the server")
    }
}
