#if canImport(Glibc)
import ArgumentParser
import NetsimCore
import NetsimDNS
import NetsimLink
import NetsimPacket

/// `netsim shell`'s use of the namespace's resolver.
extension NamespaceResolver {
    /// The resolver for `shell` from the command's flags; on failure the shell is closed and the
    /// error is the command's (a bad `--dns` is a usage error, exit 64, as every other bad flag;
    /// QA 63: it exited 2).
    static func start(for shell: PacketShell, options: ShellDNSOptions, profile: LinkProfile?, eventLog: EventLog) throws -> NamespaceResolver {
        do {
            return try NamespaceResolver(shell: shell, names: options.names, faults: options.faults.faults(profile: profile), eventLog: eventLog)
        } catch Problem.usage(let message) {
            shell.close()
            printStatus("netsim shell: --dns \(message)")
            throw ExitCode(64)
        } catch {
            shell.close()
            throw RuntimeError("netsim shell: \(error)")
        }
    }

    /// `dns: 198.18.0.1:53 answers api.test (anything else: NXDOMAIN); delay 3 s`
    var banner: String {
        let known = server.zone.names.keys.sorted()
        let names = known.isEmpty ? "no names (every lookup: NXDOMAIN)" : "answers \(known.joined(separator: ", ")) (any other name: NXDOMAIN)"
        let faults = server.zone.faults.isEmpty ? "" : "; \(server.zone.faults)"
        return "dns: NETSIM_HOST:53 \(names)\(faults)"
    }
}
#endif
