import Foundation
import NetsimCore
import NetsimLoopback

/// Blocking HTTP helpers for the service tests: a keep-alive upstream, a response reader that
/// does not need the server to close, and a client for the API server over a real socket.
enum HTTPTestSupport {
    /// One HTTP response as a client sees it.
    struct Response {
        var status: Int
        var head: String
        var body: String

        func header(_ name: String) -> String? {
            for line in head.components(separatedBy: "\r\n").dropFirst() {
                let parts = line.split(separator: ":", maxSplits: 1)
                if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces).caseInsensitiveCompare(name) == .orderedSame {
                    return parts[1].trimmingCharacters(in: .whitespaces)
                }
            }
            return nil
        }
    }

    /// Reads one response: the head, then `Content-Length` bytes of body (or to EOF without one).
    /// The timeout only stops a test that would hang: at the start of a batch on two cores every
    /// test waits its turn for ~18 s, and a 10 s one failed an outage test that takes 40 ms alone
    /// (a clean-clone CI run).
    static func readResponse(_ socket: BlockingSocket, timeout: Duration = ForwardProxyTests.patience) throws -> Response {
        var received: [UInt8] = []
        var headEnd: Int?
        while headEnd == nil {
            let chunk = try socket.receive(timeout: timeout)
            if chunk.isEmpty { throw SocketFailure.other(errno: ENODATA) }
            received += chunk
            headEnd = received.indices.dropLast(3).first { received[$0...].starts(with: Array("\r\n\r\n".utf8)) }
        }
        let head = String(decoding: received[..<headEnd!], as: UTF8.self)
        var body = Array(received[(headEnd! + 4)...])
        let status = Int(head.split(separator: " ", maxSplits: 2).dropFirst().first ?? "") ?? 0
        let response = Response(status: status, head: head, body: "")
        if let length = response.header("Content-Length").flatMap(Int.init) {
            while body.count < length {
                let chunk = try socket.receive(timeout: timeout)
                if chunk.isEmpty { break }
                body += chunk
            }
        } else {
            body += try socket.receiveToEnd(timeout: timeout)
        }
        return Response(status: status, head: head, body: String(decoding: body, as: UTF8.self))
    }

    /// Sends a GET in origin form and reads the response.
    static func get(_ socket: BlockingSocket, _ path: String = "/", host: String = "api.example.test") throws -> Response {
        try socket.send("GET \(path) HTTP/1.1\r\nHost: \(host)\r\n\r\n")
        return try readResponse(socket)
    }

    /// An HTTP/1.1 server on loopback that answers every request on a connection (keep-alive)
    /// with `200` and the body `upstream`, and counts the requests it got.
    final class Upstream: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        private var server: LoopbackServer!
        var endpoint: Endpoint { server.endpoint }
        var requests: Int { lock.withLock { count } }

        init() throws {
            server = try LoopbackServer { [self] socket in
                var buffer: [UInt8] = []
                while true {
                    guard let chunk = try? socket.receive(timeout: .seconds(30)), !chunk.isEmpty else { return }
                    buffer += chunk
                    while let end = buffer.indices.dropLast(3).first(where: { buffer[$0...].starts(with: Array("\r\n\r\n".utf8)) }) {
                        buffer.removeFirst(end + 4)
                        lock.withLock { count += 1 }
                        guard (try? socket.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 8\r\n\r\nupstream")) != nil else { return }
                    }
                }
            }
        }

        func stop() { server.stop() }
    }

    /// Calls the API server over a real socket; returns the status and the body.
    static func api(_ server: Endpoint, _ method: String, _ path: String, json: String? = nil) async throws -> (Int, String) {
        try await offload {
            let socket = try BlockingSocket.connect(to: server)
            defer { socket.close() }
            let body = json ?? ""
            try socket.send("\(method) \(path) HTTP/1.1\r\nHost: \(server)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)")
            let response = try readResponse(socket)
            return (response.status, response.body)
        }
    }
}
