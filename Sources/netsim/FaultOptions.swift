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

    @Option(name: .customLong("fault-at"), help: ArgumentHelp("Fire the faults this long after the relay started. Example: --fault-at 5s", valueName: "duration"), transform: parseDuration)
    var at: Duration?

    @Option(name: .customLong("fault-after"), help: ArgumentHelp("Fire the faults on each connection this long after it opened. Example: --fault-after 2s", valueName: "duration"), transform: parseDuration)
    var after: Duration?

    @Option(name: .customLong("fault-target"), help: ArgumentHelp("Which connections: all, new (opened after the fault fires), existing (open when it fires). Example: --fault-target existing", valueName: "all|new|existing"))
    var target: FaultTarget = .all

    @Option(name: .customLong("fault-probability"), help: ArgumentHelp("Affect each targeted connection with this probability, decided from --seed. Example: 30%", valueName: "percent"), transform: parseProbability)
    var probability: Probability = .certain

    @Option(name: .customLong("fault-for"), help: ArgumentHelp("Lift the faults this long after they fire (a blackhole clears, refused connections are accepted again). Example: 10s", valueName: "duration"), transform: parseDuration)
    var lasts: Duration?

    func validate() throws {
        if at != nil, after != nil {
            throw ValidationError("--fault-at and --fault-after exclude each other: one is relay time, the other per connection")
        }
        if let lasts, lasts <= .zero {  // as a scenario's `for:` (a fault lifted as it fires does nothing)
            throw ValidationError("--fault-for \(lasts.compactDescription): give a duration longer than 0, e.g. 10s")
        }
        if faults.isEmpty, at != nil || after != nil || lasts != nil || probability.fraction < 1 || target != .all {
            throw ValidationError("--fault-at, --fault-after, --fault-target, --fault-probability and --fault-for need a --fault")
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

