/// When to arm a release timer so that it fires on time despite the machine's wake-up lateness,
/// and how long to wait precisely once it has fired. Pure: time comes in as monotonic nanoseconds.
///
/// Why: an event loop asleep on a timerfd wakes late, and on a VM much later after a long sleep
/// than after a short one (on the 2-vCPU Firecracker VM of docs/benchmarks.md: about 125 µs at the
/// median and 190–370 µs at the tail after 50 ms, about 30 µs after 1 ms), so a 50 ms delay was
/// 50.2–50.6 ms. Arming the timer early by the lateness recently seen and spinning the rest of the
/// way to the deadline releases on time to the microsecond while the lead covers the lateness.
///
/// What it costs, and its bounds:
/// - Only timers that are armed pay: an idle relay, or one whose links have no delay or rate,
///   arms none and never spins.
/// - A sleep shorter than ``minimumSleepInLeads`` leads is armed at its deadline: short sleeps wake
///   nearly on time, and spinning a lead out of every short sleep would cost a large share of the core.
/// - Spinning is paid from a budget of ``spinShare`` of wall time (with up to ``spinBurst`` saved
///   up); while it is spent, timers are armed at their deadlines again, as without this model.
/// - The lead is the largest lateness among the last ``window`` long sleeps, capped at
///   ``maximumLead``: it follows the machine both ways within a few dozen wake-ups.
public struct EarlyWakeUp: Sendable {
    public static let maximumLead: Int64 = 500_000
    public static let minimumSleepInLeads: Int64 = 20
    /// A sleep at least this long teaches the lead (shorter ones wake nearly on time and would
    /// teach a lead too small for the long sleeps that need it).
    public static let learningSleep: Int64 = 2_000_000
    public static let window = 32
    public static let spinShare = 0.02
    public static let spinBurst: Int64 = 5_000_000

    /// The lateness of the last long sleeps, a ring of ``window``.
    private var recent: [Int64] = []
    private var nextSlot = 0
    /// How early a long sleep is armed now.
    public private(set) var lead: Int64 = 0
    /// Spin nanoseconds that may still be spent, and when the budget was last topped up.
    private var budget = Double(Self.spinBurst)
    private var budgetAt: Int64?
    /// Nanoseconds spent spinning so far, for diagnostics and the bench.
    public private(set) var spunNanoseconds: Int64 = 0

    public init() {}

    /// When to arm a timer that must fire at `deadline`, armed at `now`.
    public mutating func armTime(deadline: Int64, now: Int64) -> Int64 {
        refill(now)
        guard lead > 0, deadline.subtractingReportingOverflow(now).partialValue >= lead * Self.minimumSleepInLeads,
              budget >= Double(lead) else { return deadline }
        return deadline - lead
    }

    /// The timer armed at `armedAt` to fire at `armedFor` (for `deadline`) fired at `now`. Learns
    /// from its lateness and returns how long to spin before the deadline (0: it is already due).
    public mutating func fired(armedAt: Int64, armedFor: Int64, deadline: Int64, now: Int64) -> Int64 {
        if armedFor - armedAt >= Self.learningSleep { learn(lateness: max(0, now - armedFor)) }
        refill(now)
        let spin = max(0, deadline - now)
        budget -= Double(spin)
        spunNanoseconds += spin
        return spin
    }

    private mutating func learn(lateness: Int64) {
        let sample = min(lateness, Self.maximumLead)
        if recent.count < Self.window {
            recent.append(sample)
        } else {
            recent[nextSlot] = sample
            nextSlot = (nextSlot + 1) % Self.window
        }
        lead = recent.max() ?? 0
    }

    private mutating func refill(_ now: Int64) {
        if let budgetAt, now > budgetAt {
            budget = min(Double(Self.spinBurst), budget + Double(now - budgetAt) * Self.spinShare)
        }
        budgetAt = max(budgetAt ?? now, now)
    }
}
