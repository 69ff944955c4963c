import ArgumentParser
import NetsimCore
import NetsimFaults
import NetsimPacket

/// `netsim shell --fault NAME[=ARG][@AT][+FOR] --events FILE`: faults on the shell's timeline
/// (which starts when the namespace is up), and the log of what they did.
struct PacketFaultOptions: ParsableArguments {
    @Option(name: .customLong("fault"), help: ArgumentHelp(
        "Inject a fault at AT after the start, for FOR (repeatable): \(TimedFault.syntax), NAME one of \(FaultCatalog.packetFaultNames) (udp-block=PORT: one host port only). Example: --fault offline@2s+3s --fault handover@8s",
        valueName: "fault"), transform: parseTimedFault)
    var faults: [TimedFault] = []

    @Option(help: ArgumentHelp("Write every event — each fault's start and end, each packet a fault dropped or answered with RST, each DNS query and answer — as a JSON line to FILE, each as it happens. Example: --events shell.jsonl", valueName: "file"))
    var events: String?

    /// The timeline, checked: a fault with no packet form or a timing it cannot have is a usage error.
    func schedule() throws -> [ScheduledPacketFault] {
        try faults.map { timed in
            do { return try ScheduledPacketFault(timed) } catch { throw ValidationError("--fault \(timed.written): \(error)") }
        }
    }

    /// The event log, streaming to --events line by line (a script inside can follow it); none
    /// without it. Never standard output: the shell's validation refuses `-`.
    func eventLog() throws -> EventLog? {
        guard let events else { return nil }
        return try streamingEventLog(to: events, lineByLine: true)
    }
}

/// A shell's `--fault`: a name no fault has gets the shell's own list, not the relay's whole
/// catalog with the shell's at its end (QA 67). A relay fault is read, and refused with the
/// reason by ``PacketFaultOptions/schedule()``.
func parseTimedFault(_ text: String) throws -> TimedFault {
    let name = String(text.prefix { $0 != "=" && $0 != "@" && $0 != "+" })
    guard FaultCatalog.named(name) != nil else {
        throw UnitParseError(input: text, expected: "a fault netsim shell injects", allowedForms:
            "NAME[=ARGUMENT][@AT][+FOR] with NAME one of \(FaultCatalog.packetFaultNames) (e.g. offline@2s+3s, udp-block=443); the relay's other faults act at a relay (netsim relay --fault)")
    }
    return try TimedFault(parsing: text)
}
