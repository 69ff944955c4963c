#if canImport(Glibc)
import Foundation
import NetsimCore
import NetsimDNS
import NetsimFaults
import NetsimLink
import NetsimPacket
import NetsimScenario

/// A scenario's packet link (`link: { mode: packet }`, docs/packet.md): a network namespace the
/// client runs in, the packet path that impairs its packets, and its resolver at
/// NETSIM_HOST:53. The upstream listens on the host side (``host``); every connection the
/// client begins is recorded as `opened` (the packet path's answer to `relay:` checks), every
/// fault and DNS lookup in the run's log.
final class PacketRunLink: RunLink, @unchecked Sendable {
    // `@unchecked Sendable`: the shell and resolver are set once; the path takes commands from
    // any thread (under its own lock).
    let shell: PacketShell
    private let resolver: NamespaceResolver
    private let packetLink: PacketLinkSettings
    /// The first name of `dns: { names: … }`, which request URLs use when given.
    private let name: String?
    /// The ``InterruptCleanup`` that finishes the capture when the run is interrupted.
    private let finishOnInterrupt: UInt64?

    /// Sets the link up; `RunnerError.invalid` (a configuration or machine problem, exit 2)
    /// when it cannot.
    init(_ scenario: Scenario, seed: UInt64, log: EventLog, pcapPath: String?) throws {
        if let missing = PacketShellRequirements.missing() {
            throw RunnerError.invalid("\(scenario.file): link mode packet \(missing)")
        }
        let configuration = PacketLinkConfiguration(scenario.link, packet: scenario.packetLink)
        if let problem = configuration.problem {
            throw RunnerError.invalid("\(scenario.file): the link cannot be a packet link: \(problem)")
        }
        let tap: PacketCaptureTap?
        do { tap = try pcapPath.map(PacketCaptureTap.init(path:)) } catch {
            throw RunnerError.invalid("cannot record the run: \(error)")
        }
        // An interrupted run still leaves a whole capture (libpcap's buffer was lost with the process).
        finishOnInterrupt = tap.map { tap in InterruptCleanup.register(.capture) { tap.finish() } }
        do {
            shell = try PacketShell(link: configuration, seed: seed, tap: tap, events: log, observeConnections: true)
        } catch {
            finishOnInterrupt.map(InterruptCleanup.unregister)
            tap?.finish()
            throw RunnerError.failed("cannot set up the packet link's namespace: \(error)")
        }
        do {
            resolver = try NamespaceResolver(shell: shell, names: scenario.dns?.names ?? [], faults: scenario.dns?.faults ?? DNSFaults(), eventLog: log,
                                             ipv6: false)  // the built-in upstream listens on NETSIM_HOST (IPv4) only
        } catch {
            finishOnInterrupt.map(InterruptCleanup.unregister)
            shell.close()
            switch error {
            case NamespaceResolver.Problem.usage(let message): throw RunnerError.invalid("\(scenario.file): dns: \(message)")
            default: throw RunnerError.failed("cannot start the packet link's resolver: \(error)")
            }
        }
        packetLink = scenario.packetLink
        name = scenario.dns?.names.first?.name
    }

    /// The host side's address (NETSIM_HOST): where the upstream listens.
    var host: String { shell.namespace.plan.host.description }

    /// `host:port` for request URLs: the first `dns:` name (looked up through netsim's resolver,
    /// over the link), else NETSIM_HOST's address.
    func authority(port: Int) -> String { "\(name ?? host):\(port)" }

    /// `command` run inside the namespace (`ip netns exec`, which also gives it the namespace's
    /// resolv.conf), and the variables it gets (NETSIM_HOST, …).
    func placing(_ command: [String]) throws -> (command: [String], environment: [String: String]) {
        guard let ip = IPRoute.executable else { throw RunnerError.invalid("link mode packet needs iproute2's `ip`") }
        return ([ip, "netns", "exec", shell.namespace.name.description] + command, shell.environment)
    }

    func addFault(_ rule: FaultRule) async throws -> FaultID {
        let fault = try PacketFault(rule.kind)
        return FaultID(raw: shell.path.inject(fault, for: rule.lasts).raw)
    }

    func removeFault(_ id: FaultID) async { shell.path.lift(PacketFaultID(raw: id.raw)) }

    func removeAllFaults() async { shell.path.liftAll() }

    func setLink(_ link: LinkConfiguration) async {
        shell.path.setLink(PacketLinkConfiguration(link, packet: packetLink))
    }

    func signIn() async {}

    /// Removes the resolver, the path and the namespace; the path's final counters.
    @discardableResult
    func stop() -> PacketCounters {
        finishOnInterrupt.map(InterruptCleanup.unregister)
        resolver.close()
        return shell.close()
    }
}

extension PacketLinkConfiguration {
    /// A scenario's link as a packet path carries it: the relay's settings with the packet-only
    /// ones on top (a queue of 1000 packets unless `queue:` says otherwise).
    init(_ link: LinkConfiguration, packet: PacketLinkSettings) {
        self.init()
        for direction in Direction.allCases {
            let own = packet[direction]
            self[direction] = PacketDirectionLink(
                base: link[direction], queue: own.queue ?? .standard,
                duplicate: own.duplicate ?? .zero, corrupt: own.corrupt ?? .zero, reorder: own.reorder ?? .zero)
        }
    }
}
#endif
