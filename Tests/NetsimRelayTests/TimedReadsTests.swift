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
    /// upstream — from the start, or set while the connection is open (a timeline's or a
    /// toxic's link change: the connection opened unimpaired, with NIO's plain reads). Counted
    /// from the kernel's receive time, the bytes are due when the loop is free again (the echo is
    /// back after ~1 s); counted from the late read, after ~2 s.
    @Test(arguments: [false, true])
    func aDelayCountsFromWhenTheKernelReceivedTheBytes(linkSetWhileOpen: Bool) async throws {
        let server = try LoopbackServer.echo()
        defer { server.stop() }
        let link = LinkConfiguration(up: DirectionLink(latency: .seconds(1)), down: DirectionLink())
        try await withRelay(upstream: server.endpoint, link: linkSetWhileOpen ? .unimpaired : link) { relay, endpoint in
            let loops = Array(relay.group.makeIterator())
            let socket = try await offload { () -> BlockingSocket in
                let socket = try BlockingSocket.connect(to: endpoint)
                try socket.send("warm")  // the connection is up and relayed before the stall
                _ = try socket.receive(exactly: 4)
                return socket
            }
            defer { socket.close() }
            if linkSetWhileOpen {
                await relay.setLink(link)
                // NIO reads the first message after the change into its old buffer (untimed, see
                // `TimedReads.buffer(startingWith:allocator:)`); from the next one on, reads are timed.
                try await offload {
                    try socket.send("next")
                    _ = try socket.receive(exactly: 4)
                }
            }
            let seconds = try await offload { () -> Double in
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
