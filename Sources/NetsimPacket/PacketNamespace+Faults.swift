#if canImport(Glibc)
import Foundation
/// What the packet faults change in the namespace itself: its interface's state (`offline`) and
/// its address (`handover`). Each is a few `ip` commands; the packet path runs them off its own
/// thread (``PacketFaultDriver``), so packets keep moving while `ip` runs.
extension PacketNamespace {
    /// Takes the namespace's interface down: the kernel drops its routes with it, so a connect
    /// fails at once with ENETUNREACH, and sockets already open keep their state.
    func takeInterfaceDown() throws {
        try IPRoute.run(["-n", name.description, "link", "set", name.clientDevice, "down"])
    }

    /// Brings the interface back with its routes (which went away with it) and `addresses` (IPv6
    /// drops a downed interface's addresses; `replace` puts back what is missing).
    func bringInterfaceUp(addresses: (v4: IPv4Address, v6: IPv6Address)) throws {
        let ns = name.description, device = name.clientDevice
        try IPRoute.run(["-n", ns, "link", "set", device, "up"])
        try IPRoute.run(["-n", ns, "route", "replace", "default", "dev", device])
        if hasIPv6 {
            try IPRoute.run(["-n", ns, "-6", "addr", "replace", addresses.v6.description, "peer", plan.host6.description, "dev", device, "nodad"])
            try IPRoute.run(["-n", ns, "-6", "route", "replace", "default", "dev", device])
        }
    }

    /// Moves the namespace from one address to the other, as a phone moving from Wi-Fi to
    /// cellular does: the old address is removed, the new one added, and every socket still bound
    /// to the old one is destroyed (`ss -K`, SOCK_DESTROY: what Android's netd does when an address
    /// goes away; the application gets ECONNABORTED). Returns how many sockets were destroyed, nil
    /// when `ss -K` is not available (the kernel lacks CONFIG_INET_DIAG_DESTROY): those sockets
    /// then hang until their own timeouts, as on a plain Linux laptop.
    ///
    /// With the interface down (`offline` in force) only the IPv4 address moves now: a downed
    /// interface takes no routes and has lost its IPv6 address, and ``bringInterfaceUp(addresses:)``
    /// puts both back, at the new addresses, when it lifts. The sockets are destroyed either way
    /// (QA 38: `route replace` failed on the downed device, and `ss -K` never ran).
    func moveClient(from old: (v4: IPv4Address, v6: IPv6Address), to new: (v4: IPv4Address, v6: IPv6Address), interfaceDown: Bool = false) throws -> Int? {
        let ns = name.description, device = name.clientDevice
        // Old first: both have the same peer, so the new one would be the old one's secondary
        // and go away with it. (A phone has no address for a moment too.)
        try IPRoute.run(["-n", ns, "addr", "del", old.v4.description, "peer", plan.host.description, "dev", device])
        try IPRoute.run(["-n", ns, "addr", "add", new.v4.description, "peer", plan.host.description, "dev", device])
        if !interfaceDown { try IPRoute.run(["-n", ns, "route", "replace", "default", "dev", device]) }
        if hasIPv6, !interfaceDown {
            try IPRoute.run(["-n", ns, "-6", "addr", "del", old.v6.description, "peer", plan.host6.description, "dev", device])
            try IPRoute.run(["-n", ns, "-6", "addr", "add", new.v6.description, "peer", plan.host6.description, "dev", device, "nodad"])
            try IPRoute.run(["-n", ns, "-6", "route", "replace", "default", "dev", device])
        }
        // ss wants an IPv6 address in brackets (a bare one reads as host:port).
        return destroySockets(boundTo: hasIPv6 ? [old.v4.description, "[\(old.v6)]"] : [old.v4.description])
    }

    /// `ip netns exec NS ss -K -t -u src ADDRESS` for each address; the number of sockets closed.
    private func destroySockets(boundTo addresses: [String]) -> Int? {
        guard let ss = ["/usr/bin/ss", "/bin/ss", "/usr/sbin/ss", "/sbin/ss"].first(where: FileManager.default.isExecutableFile(atPath:)) else { return nil }
        var closed = 0
        for address in addresses {
            guard let output = try? IPRoute.run(["netns", "exec", name.description, ss, "-K", "-H", "-t", "-u", "src", address]) else { return nil }
            closed += output.split(separator: "\n").count
        }
        return closed
    }
}
#endif
