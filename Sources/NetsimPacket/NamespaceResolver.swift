#if canImport(Glibc)
import Foundation
import NetsimCore
import NetsimDNS
import NetsimLink

/// A namespace's resolver (`netsim shell`, a scenario's packet link): netsim's DNS server on NETSIM_HOST:53 (UDP and TCP, on the host side, so
/// queries and answers cross the link) and the namespace's resolv.conf pointing at it.
///
/// Every shell has one, with or without `--dns`: a namespace left with the host's resolv.conf
/// would send its lookups to an address the packet path drops, and each would hang for the
/// resolver's whole timeout; here an unknown name gets NXDOMAIN at once.
public final class NamespaceResolver {
    public let server: DNSServer
    private let files: NamespaceResolverFiles

    /// Why the resolver cannot be set up: a usage error (exit 2) or the machine (exit 1).
    public enum Problem: Error {
        case usage(String)
        case setup(String)
    }

    /// - Parameter ipv6: answer AAAA for names that point at the host side (default: when the
    ///   namespace has IPv6); off when the server there listens on NETSIM_HOST alone.
    public init(shell: PacketShell, names: [DNSMapping], faults: DNSFaults, eventLog: EventLog, ipv6: Bool? = nil) throws {
        NamespaceResolverFiles.sweepStale()
        let namespace = shell.namespace
        let plan = namespace.plan
        var zone = DNSZone(faults: faults)
        for mapping in names {
            switch mapping.target {
            case .host:
                zone.add(mapping.name, address: Self.bytes(plan.host))
                if ipv6 ?? namespace.hasIPv6 { zone.add(mapping.name, address: plan.host6.bytes) }
            case .address(let text):
                let host6 = namespace.hasIPv6 ? plan.host6.bytes : nil
                guard let bytes = DNSMapping.addressBytes(text), bytes == Self.bytes(plan.host) || bytes == host6 else {
                    let hosts = [plan.host.description] + (namespace.hasIPv6 ? [plan.host6.description] : [])
                    throw Problem.usage("\(mapping): the packet path delivers only to NETSIM_HOST (\(hosts.joined(separator: ", "))), so an answer naming any other address sends the command nowhere; write \(mapping.name)=host")
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

    public static func bytes(_ address: IPv4Address) -> [UInt8] {
        [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: address.value >> $0) }
    }

    public func close() {
        files.remove()
        server.stop()
    }
}
#endif
