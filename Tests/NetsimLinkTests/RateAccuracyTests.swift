import NetsimCore
import NetsimLink
import NetsimLoopback
import Testing

@Suite struct RateAccuracyTests {
    /// Rates from a modem to a data-centre NIC, each with a transfer long enough to be rated in
    /// thousands of pieces. The clock starts at ~12 days of uptime, where Double nanoseconds
    /// would already have lost precision had the limiter not measured from its first arrival.
    @Test(arguments: [
        (8e3, 200.0), (64e3, 100.0), (1e6, 20.0), (100e6, 4.0), (1e9, 2.0), (10e9, 1.0),
    ])
    func longTransfersRunAtTheConfiguredRateWithinATenthOfAPercent(bitsPerSecond: Double, seconds: Double) {
        let rate = DataRate(bitsPerSecond: bitsPerSecond)
        let total = Int(rate.bytesPerSecond * seconds)
        let start: Int64 = 1_036_800 * second + 123_457
        // 64 KiB chunks arriving twice as fast as the link drains them: always backlogged.
        let chunk = 65536
        let chunkInterval = Int64(Double(chunk) / rate.bytesPerSecond * 1e9 / 2)
        var chunks: [(count: Int, arrival: Int64)] = []
        var fed = 0
        while fed < total {
            chunks.append((min(chunk, total - fed), start + Int64(chunks.count) * chunkInterval))
            fed += chunk
        }
        let run = feed(DirectionLink(bandwidth: rate), chunks: chunks)
        #expect(contractViolations(run) == [])
        let releases = allReleases(run)

        // Measured from the first byte's arrival, as a user sees a download: the link is never
        // idle, so the last byte goes exactly total / rate later (to the nanosecond rounding).
        let elapsed = Double(releases.last!.at - start) / 1e9
        let achieved = Double(total) / elapsed
        #expect(abs(achieved / rate.bytesPerSecond - 1) < 1e-6, "achieved \(achieved) B/s of \(rate.bytesPerSecond)")
    }

    /// The serialization guarantee with irregular arrivals and idle gaps: of the bytes that
    /// arrived at or after any time s, no more than rate × (t − s) have been released by any time t,
    /// so no byte, the first of a burst included, leaves before its own serialization ends.
    @Test func noByteLeavesBeforeEveryByteUpToItHasBeenSerialized() async throws {
        let rate = DataRate.kbit(256)
        // Quadratic in the releases: computed on a thread of its own, not on the test pool that
        // other tests' timers need (see Offload.swift).
        let worstExcess = try await offload { () -> Double in
            var random = SeededRandom(seed: 11)
            var arrival: Int64 = 0
            var chunks: [(count: Int, arrival: Int64)] = []
            for _ in 0..<300 {
                arrival += random.chance(0.1) ? Int64(random.nextUnit() * 2e9) : Int64(random.nextUnit() * 20e6)
                chunks.append((1 + Int(random.nextUnit() * 4000), arrival))
            }
            let run = feed(DirectionLink(bandwidth: rate), chunks: chunks)
            var worstExcess = -Double.infinity
            for window in run.indices {
                let start = run[window].arrival
                var bytes = 0
                for call in run[window...] {
                    for release in call.releases {
                        bytes += release.bytes
                        let allowance = rate.bytesPerSecond * Double(release.at - start) / 1e9
                        worstExcess = max(worstExcess, Double(bytes) - allowance)
                    }
                }
            }
            return worstExcess
        }
        // Release times are rounded up to whole nanoseconds, which can only help.
        #expect(worstExcess <= 0.001)
        // ... and the bound is tight: a burst on an idle link goes at the full rate from its first byte.
        #expect(worstExcess > -1)
    }
}
