import NetsimCore
import Testing

@Suite struct EarlyWakeUpTests {
    let ms: Int64 = 1_000_000
    let µs: Int64 = 1_000

    /// One timer for `deadline` armed at `now`, firing `lateness` after the time it was armed for.
    /// Returns (armed for, spin).
    func cycle(_ model: inout EarlyWakeUp, now: Int64, deadline: Int64, lateness: Int64) -> (Int64, Int64) {
        let armedFor = model.armTime(deadline: deadline, now: now)
        let spin = model.fired(armedAt: now, armedFor: armedFor, deadline: deadline, now: armedFor + lateness)
        return (armedFor, spin)
    }

    @Test func withNothingLearnedATimerIsArmedAtItsDeadline() {
        var model = EarlyWakeUp()
        #expect(model.lead == 0)
        #expect(model.armTime(deadline: 50 * ms, now: 0) == 50 * ms)
    }

    @Test func aLongSleepTeachesTheLeadAndTheNextOneWakesEarlyAndSpinsTheRest() {
        var model = EarlyWakeUp()
        // Woke 150 µs late after 50 ms: that is the lead from now on.
        #expect(cycle(&model, now: 0, deadline: 50 * ms, lateness: 150 * µs) == (50 * ms, 0))
        #expect(model.lead == 150 * µs)
        // Armed 150 µs early, woke 100 µs after that: spins the 50 µs left, then releases on time.
        #expect(cycle(&model, now: 100 * ms, deadline: 150 * ms, lateness: 100 * µs) == (150 * ms - 150 * µs, 50 * µs))
        #expect(model.spunNanoseconds == 50 * µs)
        // Woke later than the lead: no spin (already due), and the lead grows to the new worst.
        #expect(cycle(&model, now: 200 * ms, deadline: 250 * ms, lateness: 180 * µs) == (250 * ms - 150 * µs, 0))
        #expect(model.lead == 180 * µs)
    }

    @Test func shortSleepsAreArmedAtTheirDeadlineAndTeachNothing() {
        var model = EarlyWakeUp()
        _ = cycle(&model, now: 0, deadline: 50 * ms, lateness: 200 * µs)
        // 20 leads = 4 ms: a 3 ms sleep is armed exactly, and its 30 µs lateness is not learned.
        #expect(cycle(&model, now: 100 * ms, deadline: 103 * ms, lateness: 30 * µs) == (103 * ms, 0))
        #expect(model.lead == 200 * µs)
        #expect(model.armTime(deadline: 204 * ms, now: 200 * ms) == 204 * ms - 200 * µs)
    }

    @Test func theLeadIsTheWorstOfTheLastWindowAndCapped() {
        var model = EarlyWakeUp()
        var now: Int64 = 0
        _ = cycle(&model, now: now, deadline: now + 50 * ms, lateness: 5 * ms)
        #expect(model.lead == EarlyWakeUp.maximumLead)
        // A window of calmer wake-ups (each 100 µs after its early arming) forgets the outlier.
        for _ in 0..<EarlyWakeUp.window {
            now += 100 * ms
            _ = cycle(&model, now: now, deadline: now + 50 * ms, lateness: 100 * µs)
        }
        #expect(model.lead == 100 * µs)
    }

    @Test func spinningStopsWhenItsBudgetIsSpentAndResumesAsItRefills() {
        var model = EarlyWakeUp()
        var now: Int64 = 0
        _ = cycle(&model, now: now, deadline: now + 10 * ms, lateness: EarlyWakeUp.maximumLead)
        // Every timer wakes at once when armed early: each spins the whole lead (500 µs) out of a
        // 5 ms budget that refills at 2% of wall time (200 µs per 10 ms cycle): net −300 µs a cycle.
        var spun: [Int64] = []
        for _ in 0..<40 {
            now += 10 * ms
            spun.append(cycle(&model, now: now, deadline: now + 10 * ms, lateness: 0).1)
        }
        #expect(spun.prefix(10).allSatisfy { $0 == EarlyWakeUp.maximumLead })
        #expect(spun.contains(0))
        // Over the run no more was spent than the budget allows: the burst plus 2% of the time.
        let elapsed = Double(now + 10 * ms)
        #expect(Double(model.spunNanoseconds) <= Double(EarlyWakeUp.spinBurst) + elapsed * EarlyWakeUp.spinShare)
    }
}
