import ArgumentParser
import NetsimCore
import NetsimRelay

/// The connection-fault flags. Timing, target, probability and duration apply to every
/// `--fault` given.
struct FaultOptions: ParsableArguments {
    @Option(name: .customLong("fault"), help: ArgumentHelp(
        "Inject a connection fault (repeatable). Example: --fault portal",
        // The forms go in the discussion: a bad value's error repeats only the abstract.
        discussion: "A fault is \(FaultCatalog.allowedForms). outage and portal answer plain HTTP in the server's place.",
        valueName: "kind[=arg]"), transform: parseFault)
    var faults: [FaultKind] = []

    // Timing, target and probability are arrays only to see one given twice: the parser would
    // keep the last silently, and `--fault fin --fault-at 1s --fault stall --fault-at 5s` ran
    // both at 5 s (QA 55). One of each applies to every --fault.
    @Option(name: .customLong("fault-at"), help: ArgumentHelp("Fire the faults this long after the relay started. Example: --fault-at 5s", valueName: "duration"), transform: parseDuration)
    var atValues: [Duration] = []
    var at: Duration? { atValues.last }

    @Option(name: .customLong("fault-after"), help: ArgumentHelp("Fire the faults on each connection this long after it opened. Example: --fault-after 2s", valueName: "duration"), transform: parseDuration)
    var afterValues: [Duration] = []
    var after: Duration? { afterValues.last }

    @Option(name: .customLong("fault-target"), help: ArgumentHelp("Which connections: all, new (opened after the fault fires), existing (open when it fires; with --fault-at). Example: --fault-target existing", valueName: "all|new|existing"))
    var targetValues: [FaultTarget] = []
    var target: FaultTarget { targetValues.last ?? .all }

    @Option(name: .customLong("fault-probability"), help: ArgumentHelp("Affect each targeted connection with this probability, decided from --seed. Example: 30%", valueName: "percent"), transform: parseProbability)
    var probabilityValues: [Probability] = []
    var probability: Probability { probabilityValues.last ?? .certain }

    @Option(name: .customLong("fault-for"), help: ArgumentHelp("Lift the faults this long after they fire (a blackhole clears, refused connections are accepted again). Example: 10s", valueName: "duration"), transform: parseDuration)
    var lastsValues: [Duration] = []
    var lasts: Duration? { lastsValues.last }

    func validate() throws {
        for (flag, count) in [("--fault-at", atValues.count), ("--fault-after", afterValues.count), ("--fault-for", lastsValues.count),
                              ("--fault-target", targetValues.count), ("--fault-probability", probabilityValues.count)] where count > 1 {
            throw ValidationError("\(flag) is given \(count) times: one applies to every --fault. For faults at different times, "
                + "write them on a scenario's timeline (docs/scenario-format.md), or add them while the relay runs with netsim serve's API")
        }
        if at != nil, after != nil {
            throw ValidationError("--fault-at and --fault-after exclude each other: one is relay time, the other per connection")
        }
        if let lasts, lasts <= .zero {  // as a scenario's `for:` (a fault lifted as it fires does nothing)
            throw ValidationError("--fault-for \(lasts.compactDescription): give a duration longer than 0, e.g. 10s")
        }
        if faults.isEmpty, at != nil || after != nil || lasts != nil || probability.fraction < 1 || !targetValues.isEmpty {
            throw ValidationError("--fault-at, --fault-after, --fault-target, --fault-probability and --fault-for need a --fault")
        }
        if target == .existing, at == nil {
            // Fired as the relay starts (or as each connection opens), such a fault finds no
            // connection open before it, and never acted (QA 55: accepted, and silent).
            throw ValidationError("--fault-target existing needs --fault-at: the faults fire \(after == nil ? "as the relay starts" : "as each connection opens, --fault-after later"), "
                + "when no connection is open yet; give --fault-at DURATION to act on the connections open then")
        }
        for rule in rules {
            do { try rule.validate() } catch let error as FaultRuleError { throw ValidationError(error.description) }
        }
    }

    var rules: [FaultRule] {
        let trigger: FaultTrigger = at.map { .at($0) } ?? after.map { .after($0) } ?? .immediately
        return faults.map { FaultRule($0, trigger: trigger, target: target, probability: probability, lasts: lasts) }
    }
}

