#if canImport(Glibc)
import Glibc
import NetsimCore
import NetsimLoopback
import Testing
@testable import netsim

/// The latency part's polling harness: one thread as client and echo, never blocking. What it
/// measures belongs to `netsim bench --only latency`; here, that it carries every byte back,
/// records one round trip per ping-pong and gives up on a silent or closed peer instead of spinning on.
@Suite("bench: the polling harness")
struct PolledEchoTests {
    @Test func pingPongsComeBackWholeOnePerRecord() async throws {
        let echo = try PolledEcho()
        defer { echo.stop() }
        let recorded = try await offload { () -> [UInt64] in
            let ends = try echo.connect(through: echo.port)
            var rtts: [UInt64] = []
            try PolledEcho.pingPong(ends, size: 3000, count: 50) { rtts.append($0) }
            // Nothing is left over on either end: every message came back whole.
            var byte: UInt8 = 0
            #expect(recv(ends.client.fd, &byte, 1, Int32(MSG_DONTWAIT)) == -1)
            #expect(recv(ends.server.fd, &byte, 1, Int32(MSG_DONTWAIT)) == -1)
            return rtts
        }
        #expect(recorded.count == 50)
        #expect(recorded.allSatisfy { $0 > 0 })
    }

    @Test func pollingReadsGiveUpAtTheDeadlineAndSeeTheEnd() async throws {
        let echo = try PolledEcho()
        defer { echo.stop() }
        try await offload {
            let ends = try echo.connect(through: echo.port)
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 8, alignment: 8)
            defer { buffer.deallocate() }
            #expect(throws: SocketFailure.timedOut) {
                try ends.client.receiveAllPolling(into: buffer, deadline: SystemClock().now() + 20_000_000)
            }
            ends.server.shutdownWrite()
            #expect(try ends.client.receiveAllPolling(into: buffer, deadline: SystemClock().now() + 5_000_000_000) == false)
        }
    }
}
#endif
