import Foundation
import NetsimCore
import NetsimHTTP
import NetsimLoopback
import Testing

/// A response as it came off the wire.
struct RawResponse {
    var statusLine: String
    /// In the order sent.
    var headers: [(name: String, value: String)]
    var body: [UInt8]
    /// Chunks of a chunked body (not counting the terminating zero chunk).
    var chunkCount = 0

    var status: Int { Int(statusLine.split(separator: " ")[1]) ?? 0 }
    var text: String { String(decoding: body, as: UTF8.self) }

    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// A plain HTTP/1.1 client on a blocking socket: sends exactly the bytes a test writes and parses
/// exactly what comes back, so framing, ordering, reuse and closes are all visible. Blocking: call
/// it inside `offload`.
final class RawHTTPConnection: @unchecked Sendable {
    let socket: BlockingSocket
    private var buffer: [UInt8] = []
    let timeout: Duration

    init(_ endpoint: Endpoint, timeout: Duration = .seconds(10)) throws {
        socket = try BlockingSocket.connect(to: endpoint)
        self.timeout = timeout
    }

    func send(_ text: String) throws { try socket.send(text) }

    /// Sends a simple request (with `Content-Length` when there is a body).
    func request(_ method: String = "GET", _ target: String, headers: [String] = [], body: String? = nil) throws -> RawResponse {
        try send(Self.requestText(method, target, headers: headers, body: body))
        return try readResponse(method: method)
    }

    static func requestText(_ method: String = "GET", _ target: String, headers: [String] = [], body: String? = nil) -> String {
        var lines = ["\(method) \(target) HTTP/1.1", "Host: 127.0.0.1"] + headers
        if let body { lines.append("Content-Length: \(body.utf8.count)") }
        return lines.joined(separator: "\r\n") + "\r\n\r\n" + (body ?? "")
    }

    func readResponse(method: String = "GET") throws -> RawResponse {
        let headLines = String(decoding: try readUntil([13, 10, 13, 10]), as: UTF8.self)
            .components(separatedBy: "\r\n").filter { !$0.isEmpty }
        var response = RawResponse(statusLine: headLines[0], headers: [], body: [])
        for line in headLines.dropFirst() {
            let colon = line.firstIndex(of: ":")!
            response.headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        if method == "HEAD" { return response }
        if response.header("Transfer-Encoding") == "chunked" {
            while true {
                let sizeLine = String(decoding: try readUntil([13, 10]), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                let size = Int(sizeLine, radix: 16)!
                if size == 0 {
                    _ = try readUntil([13, 10])
                    break
                }
                response.body += try read(exactly: size)
                response.chunkCount += 1
                _ = try read(exactly: 2)
            }
        } else if let length = response.header("Content-Length").flatMap(Int.init) {
            response.body = try read(exactly: length)
        }
        return response
    }

    /// Waits for the server to end the connection: true on EOF, false if it stayed open.
    func readEOF(within wait: Duration) throws -> Bool {
        guard buffer.isEmpty else { return false }
        do {
            return try socket.receive(timeout: wait).isEmpty
        } catch SocketFailure.timedOut {
            return false
        }
    }

    private func fill() throws {
        let chunk = try socket.receive(timeout: timeout)
        if chunk.isEmpty { throw SocketFailure.other(errno: ENODATA) }
        buffer += chunk
    }

    private func readUntil(_ marker: [UInt8]) throws -> [UInt8] {
        var searchFrom = 0
        while true {
            if buffer.count >= marker.count {
                for start in searchFrom...(buffer.count - marker.count) where Array(buffer[start..<start + marker.count]) == marker {
                    let result = Array(buffer[..<(start + marker.count)])
                    buffer.removeFirst(start + marker.count)
                    return result
                }
                searchFrom = buffer.count - marker.count + 1
            }
            try fill()
        }
    }

    private func read(exactly count: Int) throws -> [UInt8] {
        while buffer.count < count { try fill() }
        defer { buffer.removeFirst(count) }
        return Array(buffer[..<count])
    }
}

/// Starts a server, runs `body`, stops the server (also when `body` throws).
func withServer<T>(
    _ routes: [HTTPRoute], idleTimeout: Duration? = nil,
    _ body: (BuiltinServer, Endpoint) async throws -> T
) async throws -> T {
    let server = BuiltinServer(routes: routes, idleTimeout: idleTimeout)
    let endpoint = try await server.start()
    do {
        let result = try await body(server, endpoint)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}

/// Polls until `condition` holds or `timeout` passes: only for what nothing announces (the
/// built-in server reports no event when a request arrives or a connection ends).
func eventually(timeout: Duration = .seconds(5), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}
