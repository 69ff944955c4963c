#if canImport(Glibc)
import Foundation
import Glibc
import NetsimCore

/// One `netsim shell`: a namespace, its packet path, and CMD running inside.
///
/// Order matters for the cleanup guarantees: stale namespaces are swept first; the namespace
/// and devices exist before CMD starts; CMD ends (or is ended) before the path stops; the
/// namespace is deleted last. A crash at any point leaves at most the namespace's name, which
/// the next shell's sweep removes (the devices die with this process).
public final class PacketShell: @unchecked Sendable {
    public let namespace: PacketNamespace
    public let path: PacketPath
    /// Namespaces of dead shells removed at start.
    public let swept: [String]
    private var child: SpawnedProcess?
    private var closed = false
    private let closing = NSLock()

    /// Creates the namespace and starts the packet path, whose timeline (and `faults` on it)
    /// starts now. Call ``PacketShellRequirements/missing()`` first.
    public init(link: PacketLinkConfiguration, seed: UInt64, tap: PacketTap?,
                faults: [ScheduledPacketFault] = [], events: EventLog? = nil, observeConnections: Bool = false) throws {
        swept = PacketNamespace.sweepStale()
        namespace = try PacketNamespace()
        do {
            path = try PacketPath(namespace: namespace, link: link, seed: seed, tap: tap, faults: faults, events: events,
                                  observeConnections: observeConnections)
        } catch {
            namespace.close()
            throw error
        }
        path.start()
    }

    /// The variables CMD gets on top of netsim's own environment.
    public var environment: [String: String] {
        var variables = ["NETSIM_HOST": namespace.plan.host.description, "NETSIM_CLIENT": namespace.plan.client.description,
                         "NETSIM_NAMESPACE": namespace.name.description]
        if namespace.hasIPv6 {
            variables["NETSIM_HOST6"] = namespace.plan.host6.description
            variables["NETSIM_CLIENT6"] = namespace.plan.client6.description
        }
        return variables
    }

    /// Starts `command` inside the namespace (through `ip netns exec`, which also gives it the
    /// namespace's own /sys and any /etc/netns/NAME files) with standard streams inherited and
    /// default signal handling (see ``SpawnedProcess``).
    public func launch(_ command: [String]) throws {
        precondition(!command.isEmpty)
        guard let ip = IPRoute.executable else { throw PacketPathError.missing("needs iproute2's `ip`") }
        child = try SpawnedProcess(ip, ["netns", "exec", namespace.name.description] + command,
                                   environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
                                   standardInput: .inherit, standardOutput: .inherit, standardError: .inherit)
    }

    public var processIdentifier: Int32? { child?.pid }

    /// Blocks until CMD exits; its exit status, or 128 + the signal that ended it (as a shell says).
    public func waitForExit() -> Int32 {
        child?.waitForExit()?.status ?? 0
    }

    /// Sends `signal` to CMD (no-op once it has exited).
    public func signal(_ signal: Int32) {
        child?.send(signal)
    }

    /// SIGKILL for CMD and every other process in the namespace: what a stop that CMD ignored
    /// ends with. Killing CMD alone left its children running (`sh -c 'trap "" TERM; sleep 30'`:
    /// the `sleep`, orphaned in a namespace with no network), as `timeout` and container runtimes
    /// never do.
    public func killAll() {
        child?.send(SIGKILL)
        for pid in namespace.processes() { kill(pid, SIGKILL) }
    }

    /// Stops the path and deletes the namespace; the final counters.
    @discardableResult
    public func close() -> PacketCounters {
        // Whole under the lock: a second caller (an interrupt during a normal stop) returns only
        // once the namespace is gone.
        closing.withLock {
            if closed { return path.counters }
            closed = true
            let counters = path.stop()
            namespace.close()
            return counters
        }
    }

    deinit { close() }
}
#endif
