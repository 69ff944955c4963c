import ArgumentParser
import Foundation
import NetsimCore
import NetsimDNS
import NetsimPacket
#if canImport(Glibc)
import Glibc
#endif

/// `netsim shell`: CMD in a network namespace whose every packet crosses netsim's link.
struct ShellCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shell",
        abstract: "Run a command in a network namespace whose packets cross an impaired link to this host (Linux, root).",
        discussion: """
            The command sees one network: the host side at $NETSIM_HOST (an address of 198.18.0.0/15, \
            RFC 2544's benchmarking range) and $NETSIM_HOST6 (2001:2::/48, RFC 5180's). Servers on this host that listen on $NETSIM_HOST (or on \
            0.0.0.0) are what it reaches; packets to any other address are dropped and counted: \
            nothing is forwarded, nothing leaves the machine. Loss, duplication and corruption are \
            real: the kernels' own TCP retransmits.

            Examples:
              sudo netsim shell --latency 50ms --bandwidth 10mbit -- sh -c 'curl http://$NETSIM_HOST:8080/'
              sudo netsim shell --profile 3g --loss 2% --pcap shell.pcap
              sudo netsim shell --down-bandwidth 2mbit --queue 30KB -- iperf3 -c 198.18.0.1 -R
              sudo netsim shell --fault offline@5s+3s --fault handover@12s --events faults.jsonl -- ./app

            Name lookups go to netsim's DNS server at $NETSIM_HOST:53, through the link: \
            --dns api.test=host answers api.test with $NETSIM_HOST, every other name is NXDOMAIN; \
            --dns-delay and --dns-fail make it slow or broken (docs/packet.md, DNS).

            A lone shell's host side is always 198.18.0.1 (and 2001:2::1); start the server there \
            once the shell runs.

            Without a command, runs $SHELL. Exits with the command's status. The namespace, its \
            devices and routes are removed when the command ends, on Ctrl-C and SIGTERM; after a \
            crash, the next netsim shell removes what is left.
            """
    )

    @OptionGroup(title: "Link model") var link: LinkOptions
    @OptionGroup(title: "Packet link") var packet: PacketLinkOptions
    @OptionGroup(title: "DNS (netsim's resolver at NETSIM_HOST:53)") var dns: ShellDNSOptions
    @OptionGroup(title: "Packet faults") var faults: PacketFaultOptions

    @Option(help: ArgumentHelp("Seed for every random decision (jitter, loss, duplication, corruption, reordering). Example: --seed 42", valueName: "n"), transform: parseSeed)
    var seed: UInt64 = 1

    @Option(help: ArgumentHelp("Record the packets at the namespace's interface (raw IP; what the command sent, and what reached it after the link) to FILE. Example: --pcap shell.pcap", valueName: "file"))
    var pcap: String?

    @Option(help: ArgumentHelp("Write the packet counters (per direction: in, delivered, lost, filtered…) as JSON to FILE when the shell ends. Example: --stats counts.json", valueName: "file"))
    var stats: String?

    @Argument(parsing: .postTerminator, help: ArgumentHelp("The command and its arguments, after --. Default: $SHELL", valueName: "command"))
    var command: [String] = []

    /// Every file the shell writes is checked before the namespace is made: `--stats` is written
    /// when the command inside ends, which may be a whole session later.
    func validate() throws {
        // Standard output is the command's (QA 63: `--pcap -` mixed its output into the capture,
        // `--stats -` wrote a file named `-`; QA 67: `--events -` said so at run time, under the
        // usage of netsim itself).
        for (path, option) in [(pcap, "--pcap"), (stats, "--stats"), (faults.events, "--events")] {
            try OutputFile.check(path, option: option, standardOutputHolds: "the command's own output")
        }
        try OutputFile.checkDistinct([("--pcap", pcap), ("--stats", stats), ("--events", faults.events)], inputs: [])
    }

    func run() throws {
        #if canImport(Glibc)
        let configuration = try packet.configuration(link: link.configuration())
        let schedule = try faults.schedule()
        if let missing = PacketShellRequirements.missing() {
            printStatus("netsim shell: \(missing)")
            throw ExitCode(2)
        }
        let login = ProcessInfo.processInfo.environment["SHELL"].flatMap { $0.isEmpty ? nil : $0 } ?? "/bin/sh"  // `SHELL=` too
        let argv = command.isEmpty ? [login] : command
        if let (status, reason) = Self.unrunnable(argv[0]) {
            printStatus("netsim shell: \(argv[0]): \(reason)")  // before anything is set up
            throw ExitCode(status)
        }
        // One log: the faults' events and the DNS server's, streamed to --events when given
        // (created only once nothing above has refused to start).
        let events = try faults.eventLog()
        // At the log's time zero: the packet path's timeline, which the log is rebased to, starts
        // later, and a seed line stamped when it was written could read later than the path's
        // first events (CI: `fault_added` at 0.000135 under a seed at 0.016874; QA 45's case).
        if let events { events.record(.seed(seed), at: events.origin) }
        let eventLog = events ?? EventLog(retention: 0)
        let tap: PacketCaptureTap?
        do { tap = try pcap.map(PacketCaptureTap.init(path:)) } catch {
            throw ValidationError("cannot record to \(pcap ?? ""): \(error)")
        }
        let signals = ShellSignals()
        let shell: PacketShell
        do {
            shell = try PacketShell(link: configuration, seed: seed, tap: tap, faults: schedule, events: events)
        } catch {
            throw RuntimeError("netsim shell: cannot set up the namespace: \(error)")
        }
        let resolver = try NamespaceResolver.start(for: shell, options: dns, profile: link.profile, eventLog: eventLog)
        for name in shell.swept { printStatus("netsim shell: removed \(name), left by a netsim that is no longer running") }
        let plan = shell.namespace.plan
        let host6 = shell.namespace.hasIPv6 ? " NETSIM_HOST6=\(plan.host6)" : " (no IPv6 on this host)"
        printStatus("netsim shell: NETSIM_HOST=\(plan.host)\(host6) (namespace \(shell.namespace.name))")
        printStatus("  link: \(configuration)")
        if let tap { printStatus("  recording: \(tap.path)") }
        printStatus("  \(resolver.banner)")
        if !schedule.isEmpty { printStatus("  faults: \(schedule.map(\.description).joined(separator: "; "))") }
        printStatus("  seed: \(seed)")
        do {
            try shell.launch(argv)
        } catch {
            resolver.close()
            shell.close()
            throw RuntimeError("netsim shell: cannot run \(argv[0]): \(error)")
        }
        signals.forward(to: shell)
        let status = shell.waitForExit()
        // Stopped by a signal: nothing it started outlives it (packet.md), whether it ended at
        // once or only at the kill 2 s later.
        if signals.stopPassed { shell.killAll() }
        resolver.close()
        let counters = shell.close()
        eventLog.flush()
        printStatus("netsim shell: up: \(counters.up.summary)")
        printStatus("  down: \(counters.down.summary)")
        if counters.notForHost > 0 {
            printStatus("  \(counters.notForHost) packets to addresses other than NETSIM_HOST dropped (no forwarding)")
        }
        printStatus("  dns: \(resolver.server.counters.summary)")
        if counters.resetsSent > 0 { printStatus("  \(counters.resetsSent) RSTs sent by faults") }
        if let stats { try writeStats(counters, dns: resolver.server.counters, to: stats) }
        if status != 0 { throw ExitCode(status) }
        #else
        printStatus("netsim shell: \(PacketShellRequirements.missing() ?? "needs Linux")")
        throw ExitCode(2)
        #endif
    }

    /// A command that cannot run gets a shell's status, as bash gives it: 127 not found (an empty
    /// name, a script whose `#!` interpreter is missing), 126 found but not executable (a folder
    /// too). `ip netns exec` said "exec of … failed" and exited 1, after the namespace was made.
    /// nil: it can run. A bare name is looked up in `PATH`, as the exec will.
    static func unrunnable(_ name: String) -> (status: Int32, reason: String)? {
        let files = FileManager.default
        guard !name.isEmpty else { return (127, "an empty command name") }
        let candidates = name.contains("/") ? [name]
            : (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map { "\($0)/\(name)" }
        func isFolder(_ path: String) -> Bool {
            var folder: ObjCBool = false
            return files.fileExists(atPath: path, isDirectory: &folder) && folder.boolValue
        }
        // isExecutableFile says yes to a searchable folder.
        if let found = candidates.first(where: { files.isExecutableFile(atPath: $0) && !isFolder($0) }) {
            guard let interpreter = Self.interpreter(of: found), !files.isExecutableFile(atPath: interpreter) else { return nil }
            return (127, "its interpreter \(interpreter) (from its #! line) is missing")
        }
        if candidates.contains(where: isFolder) { return (126, "is a folder") }
        if candidates.contains(where: { files.fileExists(atPath: $0) }) { return (126, "not executable") }
        return (127, name.contains("/") ? "no such file" : "command not found (not in PATH)")
    }

    /// The program a script's `#!` line names, or nil (not a script, or unreadable).
    static func interpreter(of path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let head = try? handle.read(upToCount: 256), head.starts(with: Array("#!".utf8)) else { return nil }
        let line = String(decoding: head.dropFirst(2).prefix { $0 != 0x0A }, as: UTF8.self)
        return line.split(whereSeparator: { $0 == " " || $0 == "\t" }).first.map(String.init)
    }

    /// The packet counters' JSON with the DNS server's under `dns`.
    private func writeStats(_ counters: PacketCounters, dns: DNSCounters, to path: String) throws {
        do {
            let encoder = JSONEncoder()
            var object = try JSONSerialization.jsonObject(with: encoder.encode(counters)) as? [String: Any] ?? [:]
            object["dns"] = try JSONSerialization.jsonObject(with: encoder.encode(dns))
            try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys]).write(to: URL(fileURLWithPath: path))
        } catch {
            throw RuntimeError("cannot write --stats \(path): \(error.localizedDescription)")
        }
    }
}
