import NetsimCore
import NetsimLink
import NetsimPacket
import Testing

/// The per-packet link on injected time: no devices, no sleeping.
@Suite struct PacketShaperTests {
    static let ms: Int64 = 1_000_000

    static func shaper(_ link: PacketDirectionLink, seed: UInt64 = 7) -> PacketShaper {
        PacketShaper(link: link, random: SeededRandom(seed: seed))
    }

    @Test func unimpairedDeliversEveryPacketAtOnceIntact() {
        var shaper = Self.shaper(PacketDirectionLink())
        for i in 0..<100 {
            let outcome = shaper.offer(size: 1500, headerLength: 20, at: Int64(i) * Self.ms)
            #expect(outcome.drops.isEmpty)
            #expect(outcome.releases == [PacketRelease(time: Int64(i) * Self.ms, corruptBit: nil, isDuplicate: false, isReordered: false)])
        }
    }

    @Test func latencyDelaysEachPacketExactly() {
        var shaper = Self.shaper(PacketDirectionLink(base: DirectionLink(latency: .milliseconds(40))))
        let outcome = shaper.offer(size: 60, headerLength: 20, at: 5 * Self.ms)
        #expect(outcome.releases.map(\.time) == [45 * Self.ms])
    }

    @Test func jitterNeverReordersUnlessAsked() {
        let base = DirectionLink(latency: .milliseconds(50), jitter: .milliseconds(40))
        var shaper = Self.shaper(PacketDirectionLink(base: base))
        var last = Int64.min
        var spread = Set<Int64>()
        for i in 0..<2000 {
            let now = Int64(i) * Self.ms / 10  // 10 000 packets/s: far closer than the jitter
            let release = shaper.offer(size: 100, headerLength: 20, at: now).releases[0]
            #expect(release.time >= last)
            #expect(release.time >= now + 10 * Self.ms)  // latency − jitter
            last = release.time
            spread.insert(release.time - now)
        }
        #expect(spread.count > 100)  // the delays really vary
    }

    @Test func reorderLetsSomePacketsOvertakeAndKeepsTheRestInOrder() {
        let base = DirectionLink(latency: .milliseconds(30))
        var shaper = Self.shaper(PacketDirectionLink(base: base, reorder: .percent(25)))
        var reordered = 0
        var lastInOrder = Int64.min
        for i in 0..<4000 {
            let now = Int64(i) * Self.ms
            let release = shaper.offer(size: 100, headerLength: 20, at: now).releases[0]
            if release.isReordered {
                reordered += 1
                #expect(release.time == now)  // skipped the delay: ahead of the 30 packets in flight
            } else {
                #expect(release.time == now + 30 * Self.ms)
                #expect(release.time >= lastInOrder)
                lastInOrder = release.time
            }
        }
        #expect((800...1200).contains(reordered), "25% of 4000, got \(reordered)")
    }

    @Test func rateSerializesBackToBackPackets() {
        // 1 Mbit/s: a 1250-byte packet takes exactly 10 ms on the wire.
        var shaper = Self.shaper(PacketDirectionLink(base: DirectionLink(latency: .milliseconds(5), bandwidth: .mbit(1))))
        let times = (0..<5).map { _ in shaper.offer(size: 1250, headerLength: 20, at: 0).releases[0].time }
        #expect(times == [15, 25, 35, 45, 55].map { $0 * Self.ms })
        // After the queue drained, a packet goes at once (plus its own serialisation and the latency).
        #expect(shaper.offer(size: 1250, headerLength: 20, at: 200 * Self.ms).releases[0].time == 215 * Self.ms)
    }

    @Test func rateIsExactOverALongRunAtManyRates() {
        for mbit in [0.064, 1.0, 10.0, 100.0, 1000.0] {
            var shaper = Self.shaper(PacketDirectionLink(base: DirectionLink(bandwidth: .mbit(mbit)), queue: .packets(1_000_000)))
            var last: Int64 = 0
            let packets = 10_000
            for _ in 0..<packets { last = shaper.offer(size: 1500, headerLength: 20, at: 1_000_000 * Self.ms).releases[0].time }
            let seconds = Double(last - 1_000_000 * Self.ms) / 1e9
            let measured = Double(packets * 1500 * 8) / seconds / 1e6
            #expect(abs(measured - mbit) / mbit < 1e-6, "\(mbit) Mbit/s measured \(measured)")
        }
    }

    @Test func fullQueueDropsTheTailInPackets() {
        var shaper = Self.shaper(PacketDirectionLink(base: DirectionLink(bandwidth: .mbit(1)), queue: .packets(10)))
        let outcomes = (0..<15).map { _ in shaper.offer(size: 1250, headerLength: 20, at: 0) }
        #expect(outcomes.prefix(10).allSatisfy { $0.releases.count == 1 })
        #expect(outcomes.suffix(5).allSatisfy { $0.drops == [.queueFull] })
        // One packet's time later, one slot is free again.
        #expect(shaper.offer(size: 1250, headerLength: 20, at: 10 * Self.ms).releases.count == 1)
        #expect(shaper.offer(size: 1250, headerLength: 20, at: 10 * Self.ms).drops == [.queueFull])
    }

    @Test func fullQueueDropsTheTailInBytes() {
        var shaper = Self.shaper(PacketDirectionLink(base: DirectionLink(bandwidth: .mbit(1)), queue: .bytes(3000)))
        #expect(shaper.offer(size: 1500, headerLength: 20, at: 0).releases.count == 1)
        #expect(shaper.offer(size: 1400, headerLength: 20, at: 0).releases.count == 1)
        #expect(shaper.offer(size: 200, headerLength: 20, at: 0).drops == [.queueFull])
        #expect(shaper.offer(size: 100, headerLength: 20, at: 0).releases.count == 1)
        #expect(shaper.backlog == (3, 3000))
    }

    @Test func bernoulliLossLosesItsShareAndTheSeedDecides() {
        let link = PacketDirectionLink(base: DirectionLink(loss: .bernoulli(.percent(10))))
        func lostIndices(seed: UInt64) -> [Int] {
            var shaper = Self.shaper(link, seed: seed)
            return (0..<10_000).filter { shaper.offer(size: 100, headerLength: 20, at: Int64($0)).drops == [.lost] }
        }
        let first = lostIndices(seed: 3)
        #expect((900...1100).contains(first.count))
        #expect(first == lostIndices(seed: 3))
        #expect(first != lostIndices(seed: 4))
    }

    @Test func gilbertElliottLosesInBursts() {
        let link = PacketDirectionLink(base: DirectionLink(loss: .gilbertElliott(averageLoss: .percent(5), meanBurst: 8)))
        var shaper = Self.shaper(link)
        var lost = 0, bursts = 0, previousLost = false
        for i in 0..<100_000 {
            let isLost = shaper.offer(size: 100, headerLength: 20, at: Int64(i)).drops == [.lost]
            if isLost { lost += 1; if !previousLost { bursts += 1 } }
            previousLost = isLost
        }
        #expect((4000...6000).contains(lost), "5% average, got \(lost)")
        let meanBurst = Double(lost) / Double(bursts)
        #expect((6.0...10.0).contains(meanBurst), "mean burst 8, got \(meanBurst)")
    }

    @Test func duplicationSendsTwoCopiesThatLiveSeparately() {
        var shaper = Self.shaper(PacketDirectionLink(base: DirectionLink(latency: .milliseconds(10)), duplicate: .percent(20)))
        var duplicates = 0
        for i in 0..<5000 {
            let releases = shaper.offer(size: 100, headerLength: 20, at: Int64(i) * Self.ms).releases
            #expect(releases.first?.isDuplicate == false)
            if releases.count == 2 {
                duplicates += 1
                #expect(releases[1].isDuplicate)
                #expect(releases[1].time >= releases[0].time)
            }
        }
        #expect((850...1150).contains(duplicates), "20% of 5000, got \(duplicates)")
    }

    /// QA 38: a copy that was then lost was not counted as duplicated, and a shell's summary
    /// (in, delivered, lost, duplicated) did not add up. Every copy made is counted.
    @Test func everyCopyMadeIsCountedWhateverBecomesOfIt() {
        var shaper = Self.shaper(PacketDirectionLink(base: DirectionLink(loss: .bernoulli(.percent(50))), duplicate: .percent(50)))
        var (offered, duplicates, released, dropped, releasedCopies) = (0, 0, 0, 0, 0)
        for i in 0..<2000 {
            let outcome = shaper.offer(size: 100, headerLength: 20, at: Int64(i) * Self.ms)
            offered += 1
            duplicates += outcome.duplicates
            released += outcome.releases.count
            dropped += outcome.drops.count
            releasedCopies += outcome.releases.filter(\.isDuplicate).count
        }
        #expect(offered + duplicates == released + dropped)
        // About half the copies are lost: counting released copies only said about half as many.
        #expect((850...1150).contains(duplicates) && releasedCopies < duplicates * 3 / 4, "\(duplicates) copies made, \(releasedCopies) released")
    }

    @Test func corruptionFlipsOneBitPastTheHeader() {
        var shaper = Self.shaper(PacketDirectionLink(corrupt: .percent(50)))
        var corrupted = 0
        for i in 0..<2000 {
            guard let bit = shaper.offer(size: 60, headerLength: 20, at: Int64(i)).releases[0].corruptBit else { continue }
            corrupted += 1
            #expect((160..<480).contains(bit))
        }
        #expect((850...1150).contains(corrupted))
        // A packet that is all header is never corrupted (there is nothing the checksum would catch).
        #expect(shaper.offer(size: 20, headerLength: 20, at: 0).releases[0].corruptBit == nil)
    }

    @Test func turningOneImpairmentOnLeavesTheOthersDecisionsAlone() {
        let lossy = DirectionLink(latency: .milliseconds(20), jitter: .milliseconds(5), loss: .bernoulli(.percent(10)))
        func lossPattern(_ link: PacketDirectionLink) -> [Bool] {
            var shaper = Self.shaper(link)
            return (0..<2000).map { shaper.offer(size: 100, headerLength: 20, at: Int64($0) * Self.ms).drops.contains(.lost) }
        }
        #expect(lossPattern(PacketDirectionLink(base: lossy)) == lossPattern(PacketDirectionLink(base: lossy, corrupt: .percent(30), reorder: .percent(10))))
    }
}
