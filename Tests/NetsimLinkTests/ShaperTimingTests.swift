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

    /// 1 Mbit/s is 125 000 bytes a second, rated in 125-byte (1 ms) pieces: each piece is released
    /// when its last byte has been serialized, so piece k at latency + k ms and the last byte at
    /// latency + exactly one second, as on a real link.
    @Test func oneMegabitTakesExactlyOneSecondForAHundredTwentyFiveKilobytes() {
        let latency = 50 * ms
        let run = feed(DirectionLink(latency: .milliseconds(50), bandwidth: .mbit(1)), chunks: [(125_000, 0)])
        let releases = run[0].releases
        #expect(contractViolations(run).isEmpty)
        #expect(releases.count == 1000)
        for (index, release) in releases.enumerated() {
            #expect(release == Release(bytes: 125, at: latency + Int64(index + 1) * ms))
        }
    }

    /// The case: a 10 KB answer at 64 kbit/s (8000 B/s, 64-byte pieces of 8 ms) arrives
    /// 1.25 s after its first byte, not 190 ms early; the first byte waits for its piece's 8 ms.
    @Test func tenKilobytesAtSixtyFourKilobitTakeTheirFullSerializationTime() {
        let start: Int64 = 1_036_800 * second + 123_457
        let run = feed(DirectionLink(bandwidth: .kbit(64)), chunks: [(10_000, start)])
        let releases = run[0].releases
        #expect(contractViolations(run).isEmpty)
        #expect(releases.count == 157)
        for (index, release) in releases.dropLast().enumerated() {
            #expect(release == Release(bytes: 64, at: start + Int64(index + 1) * 8 * ms))
        }
        #expect(releases.last == Release(bytes: 10_000 - 156 * 64, at: start + 1250 * ms))
    }

    /// At the fast end a piece is 64 KiB and the nanosecond rounding is visible: each release is
    /// the exact serialization end rounded up, never fed back (1 Gbit/s: 524 288 ns a piece;
    /// 10 Gbit/s: 52 428.8 ns, so 52 429, 104 858, 157 287, 209 716 ns after the arrival at 7).
    @Test func fastLinksSerializeEveryPieceIncludingTheFirst() {
        let gigabit = feed(DirectionLink(bandwidth: .gbit(1)), chunks: [(4 * 65536, 0)])[0].releases
        let gigabitTimes: [Int64] = [524_288, 1_048_576, 1_572_864, 2_097_152]
        #expect(gigabit == gigabitTimes.map { Release(bytes: 65536, at: $0) })
        let tenGigabit = feed(DirectionLink(bandwidth: .gbit(10)), chunks: [(4 * 65536, 7)])[0].releases
        let tenGigabitTimes: [Int64] = [52_436, 104_865, 157_294, 209_723]
        #expect(tenGigabit == tenGigabitTimes.map { Release(bytes: 65536, at: $0) })
    }

    @Test func bandwidthQueuesChunksBehindTheBacklogAndStartsAnIdleLinkOnArrival() {
        // 8 kbit/s = 1000 B/s: 64-byte pieces of 64 ms.
        let run = feed(DirectionLink(bandwidth: .kbit(8)), chunks: [(128, 0), (64, 10 * ms), (64, 10 * second), (1, 20 * second)])
        #expect(run[0].releases == [Release(bytes: 64, at: 64 * ms), Release(bytes: 64, at: 128 * ms)])
        // Arrived while the link was still busy with the first chunk: serialized right after it.
        #expect(run[1].releases == [Release(bytes: 64, at: 192 * ms)])
        // The link has long been idle: serialization starts on arrival, with no burst allowance.
        #expect(run[2].releases == [Release(bytes: 64, at: 10 * second + 64 * ms)])
        #expect(run[3].releases == [Release(bytes: 1, at: 20 * second + 1 * ms)])
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

    /// Toxiproxy's `size_variation`: each slice is the size ± up to the variation, every value
    /// in that range turns up, the same seed cuts the same way, and the bytes add up.
    @Test func sliceSizesVaryWithinTheVariationFromTheSeed() {
        let link = DirectionLink(sliceSize: 100, sliceDelay: .milliseconds(1), sliceVariation: 30)
        let run = feed(link, chunks: [(200_000, 0)])
        let sizes = run[0].releases.dropLast().map(\.bytes)
        #expect(run[0].releases.reduce(0) { $0 + $1.bytes } == 200_000)
        #expect(sizes.allSatisfy { (70...130).contains($0) }, "\(sizes.filter { !(70...130).contains($0) })")
        #expect(Set(sizes) == Set(70...130), "every size in the range turns up over ~2000 slices")
        #expect(feed(link, chunks: [(200_000, 0)])[0].releases == run[0].releases, "the same seed, the same cuts")
        #expect(feed(link, seed: 2, chunks: [(200_000, 0)])[0].releases != run[0].releases)
        // A variation past the size still cuts slices of at least one byte.
        let wide = feed(DirectionLink(sliceSize: 2, sliceVariation: 5), chunks: [(1000, 0)])
        #expect(wide[0].releases.reduce(0) { $0 + $1.bytes } == 1000)
        #expect(DirectionLink(sliceSize: 100, sliceDelay: .milliseconds(10), sliceVariation: 30).description == "slice 100B ±30B every 10ms")
    }

    /// Slice sizes draw from a stream of their own: turning variation on changes no loss decision.
    @Test func sliceVariationLeavesLossDecisionsAlone() {
        func lostSegments(_ variation: Int) -> Int {
            let link = DirectionLink(loss: .bernoulli(.percent(5)), sliceSize: 1448, sliceVariation: variation)
            // One slice per chunk (variation 0 and the largest size both fit 1448 or less).
            let run = feed(link, chunks: (0..<400).map { (count: 1000, arrival: Int64($0) * 50 * ms) })
            return run.filter { $0.releases.last!.at - $0.arrival > 100 * ms }.count
        }
        #expect(lostSegments(0) > 5)
        #expect(lostSegments(0) == lostSegments(400))
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
        // Latency, then all 3000 bytes at 1000 B/s.
        #expect(lastData == 20 * ms + 3000 * ms)
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

    /// Bytes already given to the link keep their times (serialized at the old rate); the new rate
    /// serializes the bytes given after the change, from when the link is free. Arguments: the
    /// rates, when 1536 bytes finish at the first, and how long 64 bytes take at the second.
    @Test(arguments: [(8.0, 16.0, 1536 * ms, 32 * ms), (16.0, 8.0, 768 * ms, 64 * ms)])
    func bandwidthChangeAppliesToTheBytesAfterIt(kbitBefore: Double, kbitAfter: Double, busyUntil: Int64, piece: Int64) {
        var shaper = DirectionShaper(
            link: DirectionLink(bandwidth: .kbit(kbitBefore)), roundTripNanoseconds: 0, random: SeededRandom(seed: 1))
        var out: [Release] = []
        shaper.schedule(bytes: 1536, arrivedAt: 0, into: &out)
        #expect(out.last?.at == busyUntil)
        shaper.update(link: DirectionLink(bandwidth: .kbit(kbitAfter)), roundTripNanoseconds: 0)
        out.removeAll()
        shaper.schedule(bytes: 64, arrivedAt: busyUntil / 3, into: &out)
        #expect(out == [Release(bytes: 64, at: busyUntil + piece)])
        // Once the link is idle again, the next bytes start on arrival, at the new rate.
        out.removeAll()
        shaper.schedule(bytes: 64, arrivedAt: 10 * second, into: &out)
        #expect(out == [Release(bytes: 64, at: 10 * second + piece)])
    }
}
