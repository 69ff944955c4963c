import NetsimCore
import NetsimLink
import Testing

@Suite struct ShaperTimingTests {
    @Test func latencyOnlyDelaysEveryChunkByExactlyTheLatency() {
        let run = feed(DirectionLink(latency: .milliseconds(100)), chunks: [(1000, 5 * second), (10, 5 * second + 10 * ms), (65536, 9 * second)])
        #expect(run.map(\.releases) == [
            [Release(bytes: 1000, at: 5 * second + 100 * ms)],
            [Release(bytes: 10, at: 5 * second + 110 * ms)],
            [Release(bytes: 65536, at: 9 * second + 100 * ms)],
        ])
    }

    @Test func unimpairedLinkReleasesImmediatelyInOnePiece() {
        let run = feed(DirectionLink(), chunks: [(4096, 42), (1, 43)])
        #expect(run.map(\.releases) == [[Release(bytes: 4096, at: 42)], [Release(bytes: 1, at: 43)]])
    }

    /// 1 Mbit/s is 125 000 bytes a second, rated in 125-byte (1 ms) pieces after a 1500-byte burst:
    /// the burst goes at once, then one piece every millisecond, the last at (125 000 − 1500)/125 000 s.
    @Test func oneMegabitTakesOneSecondForAHundredTwentyFiveKilobytesLessTheBurst() {
        let latency = 50 * ms
        let run = feed(DirectionLink(latency: .milliseconds(50), bandwidth: .mbit(1)), chunks: [(125_000, 0)])
        let releases = run[0].releases
        #expect(contractViolations(run).isEmpty)
        #expect(releases.first == Release(bytes: 1500, at: latency))
        #expect(releases.count == 1 + (125_000 - 1500) / 125)
        for (index, release) in releases.enumerated().dropFirst() {
            #expect(release == Release(bytes: 125, at: latency + Int64(index) * ms))
        }
        let burstTime = 1500 * second / 125_000
        #expect(releases.last?.at == latency + second - burstTime)
    }

    @Test func bandwidthPacesChunksThatArriveLaterAfterTheBucketRefilled() {
        // 8 kbit/s = 1000 B/s; 64-byte pieces; 1500-byte burst.
        let run = feed(DirectionLink(bandwidth: .kbit(8)), chunks: [(1500, 0), (64, 10 * ms), (64, 10 * second)])
        #expect(run[0].releases == [Release(bytes: 1500, at: 0)])
        // The bucket is empty at 10 ms and has refilled only 10 bytes: the piece waits until 64 are back.
        #expect(run[1].releases == [Release(bytes: 64, at: 64 * ms)])
        // Ten seconds later the bucket is full again: no wait.
        #expect(run[2].releases == [Release(bytes: 64, at: 10 * second)])
    }

    @Test func slicerSpacesSlicesBySliceDelay() {
        let link = DirectionLink(sliceSize: 100, sliceDelay: .milliseconds(10))
        let run = feed(link, chunks: [(350, 0), (200, 15 * ms), (100, 2 * second)])
        #expect(run[0].releases == [
            Release(bytes: 100, at: 0), Release(bytes: 100, at: 10 * ms),
            Release(bytes: 100, at: 20 * ms), Release(bytes: 50, at: 30 * ms),
        ])
        // Arrived while the first chunk was still being sliced: starts one delay after its last slice.
        #expect(run[1].releases == [Release(bytes: 100, at: 40 * ms), Release(bytes: 100, at: 50 * ms)])
        // The slicer was idle: starts on arrival.
        #expect(run[2].releases == [Release(bytes: 100, at: 2 * second)])
    }

    @Test func slicerWithoutDelayStillFragmentsWrites() {
        let run = feed(DirectionLink(latency: .milliseconds(5), sliceSize: 1000), chunks: [(2500, 0)])
        #expect(run[0].releases == [
            Release(bytes: 1000, at: 5 * ms), Release(bytes: 1000, at: 5 * ms), Release(bytes: 500, at: 5 * ms),
        ])
    }

    @Test(arguments: JitterDistribution.allCases)
    func bytesNeverOvertakeUnderHeavyJitter(distribution: JitterDistribution) {
        // Jitter five times the latency: half the raw delays would reorder the stream.
        var random = SeededRandom(seed: 7)
        var arrival: Int64 = 1_000 * second
        var chunks: [(count: Int, arrival: Int64)] = []
        for _ in 0..<5000 {
            arrival += Int64(random.nextUnit() * 20e6)
            chunks.append((1 + Int(random.nextUnit() * 3000), arrival))
        }
        let links = [
            DirectionLink(latency: .milliseconds(10), jitter: .milliseconds(50), distribution: distribution),
            DirectionLink(
                latency: .milliseconds(10), jitter: .milliseconds(50), distribution: distribution,
                bandwidth: .mbit(2), loss: .bernoulli(.percent(3)), sliceSize: 700, sliceDelay: .microseconds(300)),
        ]
        for link in links {
            let run = feed(link, chunks: chunks)
            #expect(contractViolations(run) == [])
            // The jitter really was heavy enough to matter: some delays were cut short by ordering.
            let delays = run.map { $0.releases[0].at - $0.arrival }
            #expect(delays.contains { $0 > 40 * ms })
        }
    }

    @Test func markerWaitsBehindQueuedBytesAndOtherwiseTakesTheLatency() {
        var shaper = DirectionShaper(
            link: DirectionLink(latency: .milliseconds(20), bandwidth: .kbit(8)), roundTripNanoseconds: 40 * ms,
            random: SeededRandom(seed: 3))
        var out: [Release] = []
        shaper.schedule(bytes: 3000, arrivedAt: 0, into: &out)
        let lastData = out.last!.at
        // Latency, then the 3000 − 1500 bytes beyond the burst at 1000 B/s.
        #expect(lastData == 20 * ms + 1500 * ms)
        #expect(shaper.releaseTimeForMarker(arrivedAt: 1 * ms) == lastData)
        #expect(shaper.releaseTimeForMarker(arrivedAt: 10 * second) == 10 * second + 20 * ms)
    }

    @Test func updateKeepsOrderingWithBytesAlreadyScheduled() {
        var shaper = DirectionShaper(
            link: DirectionLink(latency: .milliseconds(500)), roundTripNanoseconds: 1000 * ms, random: SeededRandom(seed: 1))
        var out: [Release] = []
        shaper.schedule(bytes: 100, arrivedAt: 0, into: &out)
        shaper.update(link: DirectionLink(), roundTripNanoseconds: 0)
        shaper.schedule(bytes: 100, arrivedAt: 10 * ms, into: &out)
        shaper.schedule(bytes: 100, arrivedAt: 600 * ms, into: &out)
        #expect(out == [Release(bytes: 100, at: 500 * ms), Release(bytes: 100, at: 500 * ms), Release(bytes: 100, at: 600 * ms)])
        #expect(shaper.link == DirectionLink())
    }

    @Test func updateKeepsTheTokenBucketSoABandwidthChangeDoesNotGrantAFreshBurst() {
        var shaper = DirectionShaper(
            link: DirectionLink(bandwidth: .kbit(8)), roundTripNanoseconds: 0, random: SeededRandom(seed: 1))
        var out: [Release] = []
        shaper.schedule(bytes: 1500, arrivedAt: 0, into: &out)  // empties the bucket
        shaper.update(link: DirectionLink(bandwidth: .kbit(16)), roundTripNanoseconds: 0)
        out.removeAll()
        shaper.schedule(bytes: 64, arrivedAt: 0, into: &out)
        // At 2000 B/s, 64 bytes of tokens take 32 ms to come back.
        #expect(out == [Release(bytes: 64, at: 32 * ms)])
    }
}
