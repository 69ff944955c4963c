import Foundation
import NetsimCore
import NetsimFaults
import NetsimLoopback
import NetsimRelay
import Testing

/// `cut=BYTES,rst`: the answer's head and BYTES of its body reach the client, then ECONNRESET.
/// Before, the RST (SO_LINGER 0) came as soon as the kept bytes were handed to the socket and
/// discarded them: the client got the head, or nothing, and a reset.
@Suite("cut then reset")
struct CutResetTests {
    static let head = "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n"

    @Test func theBytesTheCutKeepsArriveBeforeTheReset() async throws {
        let server = try LoopbackServer { socket in
            _ = try? socket.receive(timeout: .seconds(10))
            try? socket.send(Self.head)
            try? socket.send([UInt8](repeating: 0x61, count: 100_000))
            _ = try? socket.receiveToEnd(timeout: .seconds(10))
        }
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint, faults: [FaultRule(.cut(bytes: 1000, .rst))]) { relay, endpoint in
            for attempt in 1...5 {  // the loss was a race; each attempt would have shown it
                let (received, failure) = try await offload { () -> ([UInt8], SocketFailure?) in
                    let socket = try BlockingSocket.connect(to: endpoint)
                    defer { socket.close() }
                    try socket.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                    var received: [UInt8] = []
                    while true {
                        do {
                            let chunk = try socket.receive(timeout: .seconds(10))
                            if chunk.isEmpty { return (received, nil) }
                            received += chunk
                        } catch let failure as SocketFailure { return (received, failure) }
                    }
                }
                #expect(received.count == Self.head.utf8.count + 1000, "attempt \(attempt): \(received.count) bytes")
                #expect(failure == .reset, "attempt \(attempt): \(String(describing: failure))")
            }
        }
    }
}
