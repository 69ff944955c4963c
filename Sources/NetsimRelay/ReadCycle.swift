import NetsimFaults

/// What ``ConnectionPair`` keeps about one leg's reads between the machine's events: whether
/// they may bypass the machine, and what bypassed it. Read cycles that only bypassed end in the
/// pair (flush, the `bytes` line); the machine hears of them before its next event, so on a busy
/// unimpaired connection it is not run on every message.
struct ReadCycle {
    /// The machine's ``ConnectionMachine/canBypass(from:)``, asked after each of its events.
    var mayBypass = false
    /// Bytes written straight through in this cycle.
    var direct = 0
    /// A read of this cycle went through the machine (then the cycle ends there too).
    var usedMachine = false
    /// Bytes of whole bypassing cycles ended by the pair, not yet told to the machine.
    var unreported = 0
}

/// One value per leg of a connection.
struct PerLeg<Value> {
    var client: Value
    var upstream: Value

    init(_ value: Value) { (client, upstream) = (value, value) }

    subscript(_ leg: Leg) -> Value {
        get { leg == .client ? client : upstream }
        set { if leg == .client { client = newValue } else { upstream = newValue } }
    }
}
