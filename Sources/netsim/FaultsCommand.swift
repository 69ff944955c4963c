import ArgumentParser
import NetsimFaults

/// `netsim faults`: every fault the relay and the packet path can inject, from the catalog.
struct FaultsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "faults",
        abstract: "List every fault: how to write it, when it acts, what a client sees, its Toxiproxy toxic.",
        discussion: """
            Use a fault with --fault on relay/proxy, as a 'fault:' step in a scenario, or as a toxic \
            through 'netsim serve'. 'acts' is when it acts: accept (new connections only), \
            connection (bytes and closes), request (HTTP requests, answered in the server's place). \
            'paths' is where it works: relay, packet (netsim shell --fault NAME[=ARG][@AT][+FOR], \
            docs/packet.md), or both; the relay refuses packet-only faults.
            """)

    @Flag(help: "Print the table as Markdown (docs/faults.md holds this table).")
    var markdown = false

    func run() {
        if markdown {
            print(FaultCatalog.markdownTable)
            return
        }
        print(renderTable(header: FaultCatalog.columns, rows: FaultCatalog.rows, width: terminalTableWidth()))
        print("\nExamples: --fault \(FaultCatalog.all.filter { !$0.syntax.isEmpty }.prefix(4).map { $0.example }.joined(separator: ", --fault ")). Timing: --fault-at, --fault-after, --fault-for, --fault-target, --fault-probability.")
        print("Packet faults: netsim shell --fault offline@2s+3s --fault handover@8s (\(TimedFault.syntax)).")
    }
}
