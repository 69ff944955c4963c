#if canImport(Glibc)
import Foundation
import NetsimCore
import NetsimDNS
import NetsimLink
import NetsimPacket

/// A shell's resolver: netsim's DNS server on NETSIM_HOST:53 (UDP and TCP, on the host side, so
/// queries and answers cross the link) and the namespace's resolv.conf pointing at it.
///
/// Every shell has one, with or without `--dns`: a namespace left with the host's resolv.conf
/// would send its lookups to an address the packet path drops, and each would hang for the
/// resolver's whole timeout; here an unknown name gets NXDOMAIN at once.
final class ShellResolver {
    let server: DNSServer
    private let files: NamespaceResolverFiles

    /// Why a shell's `--dns` cannot be set up: a usage error (exit 2) or the machine (exit 1).
    enum Problem: Error {
        case usage(String)
        case setup(String)
    }

    init(shell: PacketShell, names: [DNSMapping], faults: DNSFaults, eventLog: EventLog) throws {
        NamespaceResolverFiles.sweepStale()
        let namespace = shell.namespace
        let plan = namespace.plan
        var zone = DNSZone(faults: faults)
        for mapping in names {
            switch mapping.target {
            case .host:
                zone.add(mapping.name, address: Self.bytes(plan.host))
                if namespace.hasIPv6 { zone.add(mapping.name, address: plan.host6.bytes) }
            case .address(let text):
                let host6 = namespace.hasIPv6 ? plan.host6.bytes : nil
                guard let bytes = DNSMapping.addressBytes(text), bytes == Self.bytes(plan.host) || bytes == host6 else {
                    let hosts = [plan.host.description] + (namespace.hasIPv6 ? [plan.host6.description] : [])
                    throw Problem.usage("--dns \(mapping): the packet path delivers only to NETSIM_HOST (\(hosts.joined(separator: ", "))), so an answer naming any other address sends the command nowhere; write \(mapping.name)=host")
                }
                zone.add(mapping.name, address: bytes)
            }
        }
        server = DNSServer(zone: zone, eventLog: eventLog)
        do {
            try server.start(host: plan.host.description, port: 53)
        } catch {
            throw Problem.setup("cannot start the DNS server on \(plan.host):53: \(error)")
        }
        do {
            files = try NamespaceResolverFiles(namespace: namespace.name, nameserver: plan.host.description)
        } catch {
            server.stop()
            throw Problem.setup("\(error)")
        }
    }

    static func bytes(_ address: IPv4Address) -> [UInt8] {
        [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: address.value >> $0) }
    }

    func close() {
        files.remove()
        server.stop()
    }
}
#endif

#if canImport(Glibc)
import ArgumentParser

extension ShellResolver {
    /// The resolver for `shell` from the command's flags; on failure the shell is closed and the
    /// error is the command's (a bad `--dns` exits 2).
    static func start(for shell: PacketShell, options: ShellDNSOptions, profile: LinkProfile?, eventLog: EventLog) throws -> ShellResolver {
        do {
            return try ShellResolver(shell: shell, names: options.names, faults: options.faults.faults(profile: profile), eventLog: eventLog)
        } catch Problem.usage(let message) {
            shell.close()
            printStatus("netsim shell: \(message)")
            throw ExitCode(2)
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
