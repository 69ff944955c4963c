import NetsimCore
import Testing

@Suite("Seeded randomness")
struct SeededRandomTests {
    @Test func sameSeedSameSequence() {
        var a = SeededRandom(seed: 99)
        var b = SeededRandom(seed: 99)
        var c = SeededRandom(seed: 100)
        let sa = (0..<100).map { _ in a.next() }
        #expect(sa == (0..<100).map { _ in b.next() })
        #expect(sa != (0..<100).map { _ in c.next() })
    }

    @Test func derivedStreamsAreStableAndIndependent() {
        let root = SeededRandom(seed: 7)
        var x = root.derived(1, 2)
        var y = root.derived(1, 2)
        var z = root.derived(2, 1)
        let xs = (0..<10).map { _ in x.next() }
        #expect(xs == (0..<10).map { _ in y.next() })
        #expect(xs != (0..<10).map { _ in z.next() })
    }

    @Test func unitIntervalIsUniform() {
        var random = SeededRandom(seed: 1)
        let samples = (0..<100_000).map { _ in random.nextUnit() }
        #expect(samples.allSatisfy { $0 >= 0 && $0 < 1 })
        let mean = samples.reduce(0, +) / Double(samples.count)
        // Standard error of the mean is 0.289/sqrt(1e5) ≈ 0.0009: ±0.005 is over 5 sigma.
        #expect(abs(mean - 0.5) < 0.005)
        var chance = SeededRandom(seed: 2)
        let hits = (0..<100_000).filter { _ in chance.chance(0.1) }.count
        #expect(abs(hits - 10_000) < 600)
    }

    @Test func labelsAreStable() {
        #expect(SeededRandom.label("syn") == SeededRandom.label("syn"))
        #expect(SeededRandom.label("syn") != SeededRandom.label("fault"))
    }
}

@Suite("Event log")
struct EventLogTests {
    @Test func recordsWithTimesFromItsOriginAndRendersJSONLines() {
        let clock = ManualClock(start: 5_000_000_000)
        let log = EventLog(clock: clock)
        clock.advance(by: .milliseconds(12))
        log.record(.bytes(.down, count: 1460), connection: ConnectionID(3))
        log.record(.faultFired(fault: "stale", detail: "said \"hi\"\n"))
        let events = log.events
        #expect(events.count == 2)
        #expect(events[0].time == 12_000_000)
        #expect(events[0].jsonLine == #"{"t":0.012000,"conn":3,"event":"bytes","dir":"down","bytes":1460}"#)
        #expect(events[1].jsonLine == #"{"t":0.012000,"event":"fault","fault":"stale","detail":"said \"hi\"\n"}"#)
    }

    /// The client address is typed in the event and written as it always was in the JSON line.
    @Test func anOpenedEventWritesTheClientAddressAsIPColonPort() {
        func line(_ client: Endpoint?) -> String {
            Event(time: 1_000, connection: ConnectionID(1), kind: .opened(client: client)).jsonLine
        }
        #expect(line(Endpoint(host: "127.0.0.1", port: 5555)) == #"{"t":0.000001,"conn":1,"event":"opened","client":"127.0.0.1:5555"}"#)
        #expect(line(Endpoint(host: "::1", port: 5555)) == #"{"t":0.000001,"conn":1,"event":"opened","client":"::1:5555"}"#)
        #expect(line(nil) == #"{"t":0.000001,"conn":1,"event":"opened","client":"unknown"}"#)
    }

    @Test func retentionBoundsMemoryAndCountsWhatItDropped() {
        let log = EventLog(clock: ManualClock(), retention: 3)
        for i in 0..<5 { log.record(.bytes(.up, count: i)) }
        #expect(log.events.map(\.kind) == [.bytes(.up, count: 2), .bytes(.up, count: 3), .bytes(.up, count: 4)])
        #expect(log.discardedCount == 2)
    }
}
