import NetsimCore
import NetsimLink
import NetsimPacket
import Testing

/// Mahimahi-format traces and the queue they drive, on injected time.
@Suite struct TraceQueueTests {
    static let ms: Int64 = 1_000_000

    @Test func parsesMahimahisFormatAndSaysWhereItIsWrong() throws {
        let trace = try DeliveryTrace(parsing: "0\n0\n1\n\n3\n", name: "t.up")
        #expect(trace.milliseconds == [0, 0, 1, 3])
        #expect(trace.periodNanoseconds == 3 * Self.ms)
        #expect(abs(trace.meanBitsPerSecond - 16_000_000) < 1)  // 4 × 1500 B every 3 ms
        #expect(throws: DeliveryTrace.Invalid(description: "t.up:2: 'x' is not a timestamp; expected a whole number of milliseconds (Mahimahi's trace format: one per line)")) {
            try DeliveryTrace(parsing: "1\nx\n", name: "t.up")
        }
        #expect(throws: DeliveryTrace.Invalid(description: "t.up:3: 4 ms comes before the line above (5 ms); timestamps must not decrease")) {
            try DeliveryTrace(parsing: "1\n5\n4\n", name: "t.up")
        }
        #expect(throws: DeliveryTrace.Invalid.self) { try DeliveryTrace(parsing: "\n", name: "t.up") }
        #expect(throws: DeliveryTrace.Invalid.self) { try DeliveryTrace(parsing: "0\n0\n", name: "t.up") }
    }

    @Test func packetsLeaveAtOpportunitiesAndTheTraceRepeats() throws {
        // One opportunity at 2 ms and two at 5 ms, repeating every 5 ms.
        var queue = TraceQueue(trace: try DeliveryTrace(milliseconds: [2, 5, 5], name: "t"), limit: .packets(100))
        let start: Int64 = 1_000 * Self.ms
        let departures = (0..<7).map { _ in queue.enqueue(size: 1500, at: start)! - start }
        #expect(departures == [2, 5, 5, 7, 10, 10, 12].map { $0 * Self.ms })
    }

    @Test func smallPacketsShareAnOpportunityAndLargeOnesSpanTwo() throws {
        var queue = TraceQueue(trace: try DeliveryTrace(milliseconds: [1, 2, 3, 4], name: "t"), limit: .packets(100))
        #expect(queue.enqueue(size: 500, at: 0) == 1 * Self.ms)
        #expect(queue.enqueue(size: 500, at: 0) == 1 * Self.ms)   // the same opportunity's 1000 bytes left
        #expect(queue.enqueue(size: 1000, at: 0) == 2 * Self.ms)  // 500 at 1 ms, the rest at 2 ms
        #expect(queue.enqueue(size: 1500, at: 0) == 3 * Self.ms)  // 1000 left at 2 ms, 500 at 3 ms
    }

    @Test func unusedOpportunitiesAreLostNotSaved() throws {
        var queue = TraceQueue(trace: try DeliveryTrace(milliseconds: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], name: "t"), limit: .packets(100))
        #expect(queue.enqueue(size: 1500, at: 0) == 1 * Self.ms)
        // Idle until 6.5 ms: the opportunities at 2–6 ms went by unused; the next packets get 7, 8, 9.
        #expect(queue.enqueue(size: 1500, at: 6 * Self.ms + Self.ms / 2) == 7 * Self.ms)
        #expect(queue.enqueue(size: 1500, at: 6 * Self.ms + Self.ms / 2) == 8 * Self.ms)
        #expect(queue.enqueue(size: 1500, at: 6 * Self.ms + Self.ms / 2) == 9 * Self.ms)
    }

    @Test func aFullBufferDropsTheTail() throws {
        var queue = TraceQueue(trace: try DeliveryTrace(milliseconds: [10], name: "t"), limit: .packets(3))
        let results = (0..<5).map { _ in queue.enqueue(size: 1500, at: 0) }
        #expect(results.prefix(3).allSatisfy { $0 != nil })
        #expect(results.suffix(2).allSatisfy { $0 == nil })
        #expect(queue.backlog == (3, 4500))
    }

    @Test func theShaperUsesTheTraceAndItsRateMatchesTheMean() throws {
        // 1 opportunity per ms = 12 Mbit/s; 10 000 back-to-back packets take 10 s.
        let trace = try DeliveryTrace(milliseconds: Array(1...1000), name: "t")
        var shaper = PacketShaper(link: PacketDirectionLink(base: DirectionLink(latency: .milliseconds(20)), queue: .packets(20_000), trace: trace),
                                  random: SeededRandom(seed: 1))
        var last: Int64 = 0
        for _ in 0..<10_000 { last = shaper.offer(size: 1500, headerLength: 20, at: 0).releases[0].time }
        #expect(last == (10_000 + 20) * Self.ms)
    }

    @Test func aTraceBesideABandwidthIsAProblem() throws {
        var link = PacketLinkConfiguration()
        link.down.trace = try DeliveryTrace(milliseconds: [1], name: "t")
        #expect(link.problem == nil)
        link.down.base.bandwidth = .mbit(1)
        #expect(link.problem == .traceAndBandwidth(.down))
    }
}
