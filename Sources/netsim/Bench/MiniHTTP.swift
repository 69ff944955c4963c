import Foundation
import NetsimLoopback

/// Just enough HTTP/1.1 for the demo: `GET /N` answers N bytes with Content-Length, keep-alive.
enum MiniHTTP {
    static let largestBody = 100_000_000

    /// The server side of one connection: answers requests until the client closes.
    static func serve(_ connection: BlockingSocket) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 8192, alignment: 16)
        defer { buffer.deallocate() }
        connection.setReceiveTimeout(.seconds(300))
        var pending: [UInt8] = []
        while true {
            guard let end = headerEnd(pending) else {
                guard pending.count < 16 * 1024, let n = try? connection.receiveAvailable(into: buffer), n > 0 else { return }
                pending += buffer[..<n]
                continue
            }
            let head = String(decoding: pending[..<end], as: UTF8.self)
            pending.removeSubrange(..<(end + 4))
            let words = head.split(separator: "\r\n").first?.split(separator: " ") ?? []
            guard words.count == 3, words[0] == "GET", words[1].hasPrefix("/"),
                  let size = Int(words[1].dropFirst()), (0...largestBody).contains(size) else {
                _ = try? connection.send("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            }
            do {
                try connection.send("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: \(size)\r\nConnection: keep-alive\r\n\r\n")
                let chunk = [UInt8](repeating: 0x61, count: min(size, 64 * 1024))
                var left = size
                while left > 0 {
                    let n = min(left, chunk.count)
                    try chunk.withUnsafeBytes { try connection.send(raw: UnsafeRawBufferPointer(rebasing: $0[..<n])) }
                    left -= n
                }
            } catch {
                return
            }
        }
    }

    /// The index of the blank line ending the header block.
    static func headerEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i
        }
        return nil
    }

    /// When each stage of one request finished, in nanoseconds from `start`.
    struct Timing: Sendable {
        var firstByte: Int64
        var total: Int64
        var bodyBytes: Int
    }

    /// A keep-alive client connection.
    // `@unchecked Sendable`: one client per measuring thread; never shared while in use.
    final class Client: @unchecked Sendable {
        let socket: BlockingSocket
        /// How long connect(2) took.
        let connectNanoseconds: Int64

        init(port: Int) throws {
            let start = monotonicNanoseconds()
            socket = try connectLoopback(port)
            connectNanoseconds = monotonicNanoseconds() - start
            socket.setReceiveTimeout(.seconds(30))
        }

        /// Sends `GET /size` and reads the whole response. Times count from `start`
        /// (default: when the request is sent).
        func get(_ size: Int, from start: Int64? = nil) throws -> Timing {
            let begin = start ?? monotonicNanoseconds()
            try socket.send("GET /\(size) HTTP/1.1\r\nHost: demo\r\nConnection: keep-alive\r\n\r\n")
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
            defer { buffer.deallocate() }
            var head: [UInt8] = []
            var firstByte: Int64?
            var contentLength: Int?
            var body = 0
            while contentLength.map({ body < $0 }) ?? true {
                let n = try socket.receiveAvailable(into: buffer)
                guard n > 0 else { throw RuntimeError("the server closed the connection mid-response") }
                if firstByte == nil { firstByte = monotonicNanoseconds() - begin }
                if contentLength == nil {
                    head += buffer[..<n]
                    if let end = MiniHTTP.headerEnd(head) {
                        contentLength = try Self.contentLength(String(decoding: head[..<end], as: UTF8.self))
                        body = head.count - (end + 4)
                    }
                } else {
                    body += n
                }
            }
            return Timing(firstByte: firstByte ?? 0, total: monotonicNanoseconds() - begin, bodyBytes: body)
        }

        private static func contentLength(_ head: String) throws -> Int {
            let lines = head.split(separator: "\r\n")
            guard lines.first?.hasPrefix("HTTP/1.1 200") == true else { throw RuntimeError("unexpected response: \(lines.first ?? "")") }
            for line in lines.dropFirst() {
                let parts = line.split(separator: ":", maxSplits: 1)
                if parts.count == 2, parts[0].lowercased() == "content-length", let n = Int(parts[1].trimmingCharacters(in: .whitespaces)) { return n }
            }
            throw RuntimeError("the response has no Content-Length")
        }

        func close() { socket.close() }
    }
}
