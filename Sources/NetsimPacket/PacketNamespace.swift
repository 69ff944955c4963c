#if canImport(Glibc)
import Foundation
import Glibc
import NetsimCore

/// A network namespace whose only route leads into a TUN device this process reads, with the
/// host side's TUN device beside it: the two ends of one shell's packet path.
///
/// Set up with `ip` (see ``IPRoute``). Inside: `lo` up, the namespace side's device with the
/// plan's client address and a point-to-point peer (the host address), and a default route
/// through it, so every packet CMD sends (to anywhere) reaches netsim, which then decides.
/// Outside: the host device with the host address and the client as its peer, so the host's
/// replies to the client, and nothing else, go into netsim.
///
/// ``close()`` deletes the namespace and closes the devices (which deletes them and their
/// routes). What a crash leaves, only the namespace's name under /run/netns, ``sweepStale()``
/// removes at the next start.
public final class PacketNamespace: @unchecked Sendable {
    public let name: NamespaceName
    public let plan: PacketAddressPlan
    public let hostDevice: TunDevice
    public let clientDevice: TunDevice
    /// False when the host has IPv6 turned off: the shell is then IPv4 only.
    public private(set) var hasIPv6 = false
    private var closed = false
    private let closing = NSLock()
    /// The ``InterruptCleanup`` that deletes the namespace if the command is interrupted.
    private var onInterrupt: UInt64?

    private static let counter = NSLock()
    nonisolated(unsafe) private static var nextIndex = 0

    /// Creates the namespace and both devices. Serialised across processes by a lock file so
    /// that two shells starting together never pick the same addresses. The first free /30 from
    /// the start of the range is taken, so a lone shell's host side is always 198.18.0.1: a
    /// server can be told that address (it can bind to it once the shell runs).
    public init() throws {
        let pid = getpid()
        guard let start = NamespaceName.startTime(of: pid) else { throw PacketPathError.missing("cannot read /proc/self/stat (is /proc mounted?)") }
        let index = Self.counter.withLock { () -> Int in
            defer { Self.nextIndex = (Self.nextIndex + 1) % 100 }
            return Self.nextIndex
        }
        let name = NamespaceName(pid: pid, startTime: start, index: index)
        self.name = name

        let lock = try Self.lockSetup()
        defer { flock(lock, LOCK_UN); Glibc.close(lock) }
        guard let plan = PacketAddressPlan.free(preferred: 0, inUse: Self.hostAddresses()) else {
            throw PacketPathError.noFreeAddresses
        }
        self.plan = plan
        hostDevice = try TunDevice(name: name.hostDevice)
        clientDevice = try TunDevice(name: name.clientDevice)
        do {
            // `netsim run` interrupted even during the setup deletes it (the devices die with
            // the process), rather than leaving it to the next run's sweep.
            onInterrupt = try InterruptCleanup.create(.namespace, undo: { _ = try? IPRoute.run(["netns", "delete", name.description]) }) {
                try configure()
            }.key
        } catch {
            close()
            throw error
        }
    }

    private func configure() throws {
        let ns = name.description
        let host = name.hostDevice, client = name.clientDevice
        try IPRoute.run(["netns", "add", ns])
        try IPRoute.run(["link", "set", client, "netns", ns])
        // No IPv6 link-local address: no router solicitations or MLD reports to filter and count.
        try IPRoute.run(["link", "set", host, "addrgenmode", "none"])
        // The peer is .2/31: the namespace's address and the one a handover moves it to.
        try IPRoute.run(["addr", "add", plan.host.description, "peer", plan.client.description + "/31", "dev", host])
        try IPRoute.run(["link", "set", host, "up"])
        try IPRoute.run(["-n", ns, "link", "set", "lo", "up"])
        try IPRoute.run(["-n", ns, "link", "set", client, "addrgenmode", "none"])
        try IPRoute.run(["-n", ns, "addr", "add", plan.client.description, "peer", plan.host.description, "dev", client])
        try IPRoute.run(["-n", ns, "link", "set", client, "up"])
        try IPRoute.run(["-n", ns, "route", "add", "default", "dev", client])
        hasIPv6 = configureIPv6()
    }

    /// The same link over IPv6 (no duplicate address detection: the link has two ends, both
    /// netsim's, and DAD would hold the addresses back for a second). A host with IPv6 disabled
    /// refuses the addresses; the shell is then IPv4 only.
    private func configureIPv6() -> Bool {
        let ns = name.description
        let host6 = plan.host6.description, client6 = plan.client6.description
        do {
            try IPRoute.run(["-6", "addr", "add", host6, "peer", client6 + "/127", "dev", name.hostDevice, "nodad"])
            // IPv6 makes no route for a peer's prefix (IPv4 does for .2/31): only the host's own
            // /127 (::0, ::1) went into the device, and ::3, where a handover moves the namespace,
            // was routed out of the host's real interface (QA 38).
            try IPRoute.run(["-6", "route", "replace", client6 + "/127", "dev", name.hostDevice])
            try IPRoute.run(["-n", ns, "-6", "addr", "add", client6, "peer", host6, "dev", name.clientDevice, "nodad"])
            try IPRoute.run(["-n", ns, "-6", "route", "add", "default", "dev", name.clientDevice])
            return true
        } catch {
            return false
        }
    }

    /// Deletes the namespace and both devices (closing a device's descriptor deletes it, its
    /// addresses and its routes). Safe to call more than once. The packet path must be stopped.
    public func close() {
        guard closing.withLock({ () -> Bool in
            defer { closed = true }
            return !closed
        }) else { return }
        hostDevice.close()
        clientDevice.close()
        _ = try? IPRoute.run(["netns", "delete", name.description])
        // Only now: an interruption while the delete ran ended the process with the namespace
        // left behind (QA 38: a signal during a run's teardown, 5 in 10). Its own delete of a
        // namespace already gone fails quietly.
        onInterrupt.map(InterruptCleanup.unregister)
    }

    deinit { close() }

    /// The processes whose network namespace is this one (by /proc/PID/ns/net), netsim's own
    /// never among them.
    func processes() -> [pid_t] { Self.processes(inNamespace: name.description) }

    /// The processes whose network namespace is /run/netns/`name`, netsim's own never among them.
    static func processes(inNamespace name: String) -> [pid_t] {
        var namespace = stat()
        guard stat("/run/netns/\(name)", &namespace) == 0,
              let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        let me = getpid()
        return entries.compactMap { pid_t($0) }.filter { pid in
            var own = stat()
            return pid != me && stat("/proc/\(pid)/ns/net", &own) == 0 && own.st_ino == namespace.st_ino && own.st_dev == namespace.st_dev
        }
    }

    /// Deletes every `netsim-…` namespace whose owner is no longer running (a shell that crashed
    /// or was killed with SIGKILL). Returns the names removed. Namespaces of running shells and
    /// names netsim did not make are left alone.
    @discardableResult
    public static func sweepStale() -> [String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/run/netns") else { return [] }
        var removed: [String] = []
        for entry in names.sorted() {
            guard let name = NamespaceName(parsing: entry), !name.ownerIsAlive else { continue }
            // Its command outlived a netsim killed with SIGKILL, which no cleanup survives (QA 63:
            // `sleep 20` ran on after the sweep said the namespace was removed): ended here.
            let pids = processes(inNamespace: entry)
            for pid in pids { kill(pid, SIGKILL) }
            guard (try? IPRoute.run(["netns", "delete", entry])) != nil else { continue }
            let ended = pids.map(String.init).joined(separator: ", ")
            removed.append(pids.isEmpty ? entry : "\(entry) and ended what still ran in it (process\(pids.count == 1 ? "" : "es") \(ended), SIGKILL)")
        }
        return removed
    }

    /// Every IPv4 address on the host's interfaces (other shells' host sides among them).
    static func hostAddresses() -> Set<IPv4Address> {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var found = Set<IPv4Address>()
        var cursor = list
        while let entry = cursor {
            if let address = entry.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET) {
                let raw = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr.s_addr }
                found.insert(IPv4Address(UInt32(bigEndian: raw)))
            }
            cursor = entry.pointee.ifa_next
        }
        return found
    }

    /// An exclusive lock on /run/lock/netsim-packet.lock (or /tmp's when /run/lock is missing).
    private static func lockSetup() throws -> Int32 {
        let directory = FileManager.default.fileExists(atPath: "/run/lock") ? "/run/lock" : "/tmp"
        let fd = open("\(directory)/netsim-packet.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw PacketPathError.system("cannot open \(directory)/netsim-packet.lock", errno) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else {
                let code = errno
                Glibc.close(fd)
                throw PacketPathError.system("cannot lock \(directory)/netsim-packet.lock", code)
            }
        }
        return fd
    }
}
#endif
