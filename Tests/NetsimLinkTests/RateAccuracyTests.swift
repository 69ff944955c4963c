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

        // Measure from the first release after a tenth of the bytes (past the initial burst) to the last.
        var cumulative = 0
        let firstIndex = releases.firstIndex { cumulative += $0.bytes; return cumulative > total / 10 }!
        let bytes = releases[(firstIndex + 1)...].reduce(0) { $0 + $1.bytes }
        let elapsed = Double(releases.last!.at - releases[firstIndex].at) / 1e9
        let achieved = Double(bytes) / elapsed
        #expect(elapsed > seconds * 0.8)
        #expect(abs(achieved / rate.bytesPerSecond - 1) < 0.001, "achieved \(achieved) B/s of \(rate.bytesPerSecond)")
    }

    /// The token-bucket guarantee with irregular arrivals and idle gaps: in any interval
    /// [t_i, t_j] no more than one burst plus rate × (t_j − t_i) bytes are released.
    @Test func neverExceedsOneBurstPlusTheRateInAnyInterval() async throws {
        let rate = DataRate.kbit(256)
        let burst = 1500.0
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
            let releases = allReleases(feed(DirectionLink(bandwidth: rate), chunks: chunks))
            var worstExcess = -Double.infinity
            for i in releases.indices {
                var bytes = 0
                for j in i..<releases.count {
                    bytes += releases[j].bytes
                    let allowance = burst + rate.bytesPerSecond * Double(releases[j].at - releases[i].at) / 1e9
                    worstExcess = max(worstExcess, Double(bytes) - allowance)
                }
            }
            return worstExcess
        }
        // Release times are rounded up to whole nanoseconds, which can only help.
        #expect(worstExcess <= 0.001)
        // ... and the bound is tight: the bucket does let a full burst through.
        #expect(worstExcess > -64)
    }
}
