import Foundation
import NIOCore
import NetsimCore
import NetsimLink
import NetsimLoopback
@testable import NetsimRelay
import Testing

/// A delayed connection's reads carry the kernel's receive time (``TimedReads``): the delay
/// counts from when the bytes reached the relay's socket, not from when its event loop got to
/// them. The byte-stream properties on delayed links (integrity and order, half-close, resets,
/// slow readers) are StreamTests', whose delayed cases now run through these reads.
@Suite struct TimedReadsTests {
    /// The relay's loops are kept busy for 1 s just as the client sends; the link delays 1 s
    /// upstream. Counted from the kernel's receive time, the bytes are due when the loop is free
    /// again (the echo is back after ~1 s); counted from the late read, after ~2 s.
    @Test func aDelayCountsFromWhenTheKernelReceivedTheBytes() async throws {
        let server = try LoopbackServer.echo()
        defer { server.stop() }
        let link = LinkConfiguration(up: DirectionLink(latency: .seconds(1)), down: DirectionLink())
        try await withRelay(upstream: server.endpoint, link: link) { relay, endpoint in
            let loops = Array(relay.group.makeIterator())
            let seconds = try await offload { () -> Double in
                let socket = try BlockingSocket.connect(to: endpoint)
                defer { socket.close() }
                try socket.send("warm")  // the connection is up and relayed before the stall
                _ = try socket.receive(exactly: 4)
                // Each loop is inside its stall before the byte is sent.
                let inside = DispatchSemaphore(value: 0)
                let stalled = loops.map { loop in
                    loop.submit {
                        inside.signal()
                        Thread.sleep(forTimeInterval: 1)
                    }
                }
                for _ in loops { inside.wait() }
                let start = ContinuousClock.now
                // More than one byte: NIO reads the first, the stamp comes with the rest.
                try socket.send([UInt8](repeating: 0x78, count: 100))
                _ = try socket.receive(exactly: 100)
                for stall in stalled { _ = try? stall.wait() }
                return elapsed(since: start)
            }
            #expect(seconds >= 1.0, "never released before its delay: \(seconds) s")
            #expect(seconds < 1.6, "the delay counts from the kernel's receive time, not from the read 1 s later: \(seconds) s")
        }
    }
}
