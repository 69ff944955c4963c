import NetsimCore
import NetsimFaults
import NetsimLink
import Testing

/// A rate step reaches a transfer under way: the bytes the relay read ahead and queued at the
/// old rate's bottleneck drain at the new rate from the step. They kept the times fixed as they
/// were read, so a drop to 100 kbit/s at 1 s changed nothing for seconds (QA 56).
@Suite("a link change on a transfer under way, on a clock the test moves")
struct LinkChangeTests {
    static func rate(_ bitsPerSecond: Double, latency: Duration = .zero) -> LinkConfiguration {
        var link = LinkConfiguration.unimpaired
        link.down.bandwidth = DataRate(bitsPerSecond: bitsPerSecond)
        link.down.latency = latency
        return link
    }

    /// `bytes` from the server at 0, the link changed to `after` at `at`: delivered by `end`, and
    /// not before (within 5 ms). The old rate cut them in pieces of 64 bytes: the step falls
    /// after the last piece released by then, and the ends below count from that piece.
    static func transfer(_ bytes: Int, before: LinkConfiguration, after: LinkConfiguration, at: Int64, ends end: Int64) {
        var h = MachineHarness(link: before)
        h.receive([UInt8](repeating: 7, count: bytes), from: .upstream)
        h.fin(from: .upstream)
        h.advance(to: at)
        h.machine.update(link: after, now: h.now)
        h.process()
        h.advance(to: end - 5_000_000)
        #expect((h.sent[.client]?.count ?? 0) < bytes, "done early: the old rate still applied")
        #expect(h.endings(of: .client).isEmpty, "the FIN waits behind the bytes")
        h.advance(to: end + 5_000_000)
        #expect(h.sent[.client]?.count == bytes)
        #expect(h.endings(of: .client) == [.fin], "the FIN follows the last byte")
    }

    @Test func aLowerRateSlowsTheBytesAlreadyQueued() {
        // 10 000 B/s for 0.5 s (4 992 bytes), then 5 000 B/s for the 5 008 left: 1.5016 s, not 1 s.
        Self.transfer(10_000, before: Self.rate(80_000), after: Self.rate(40_000), at: 500_000_000, ends: 1_501_600_000)
    }

    @Test func aHigherRateSpeedsThemUp() {
        // 1 000 B/s for 0.5 s (448 bytes), then 10 000 B/s for the 1 552 left: 0.6552 s, not 2 s.
        Self.transfer(2_000, before: Self.rate(8_000), after: Self.rate(80_000), at: 500_000_000, ends: 655_200_000)
    }

    @Test func withLatencyTheQueuedBytesTooTakeTheNewRate() {
        // 100 ms of latency: what is due within it from the step may still be in the latency
        // stage (moved to the new rate from now, it would skip it) and keeps its times; the rest
        // leaves at the new rate, 5 000 B/s, from then on.
        var h = MachineHarness(link: Self.rate(80_000, latency: .milliseconds(100)))
        h.receive([UInt8](repeating: 7, count: 10_000), from: .upstream)
        h.advance(to: 500_000_000)
        h.machine.update(link: Self.rate(40_000, latency: .milliseconds(100)), now: h.now)
        h.process()
        h.advance(to: 1_000_000_000)
        let before = h.sent[.client]?.count ?? 0
        h.advance(to: 1_500_000_000)
        let during = (h.sent[.client]?.count ?? 0) - before
        #expect(abs(during - 2_500) <= 64, "half a second at 5 000 B/s: \(during) bytes (the old rate gives 5 000)")
    }
}
