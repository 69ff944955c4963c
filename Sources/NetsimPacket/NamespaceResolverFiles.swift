#if canImport(Glibc)
import Foundation
import Glibc
import NetsimCore

/// The files that point a namespace's resolver at netsim: /etc/netns/NAME/resolv.conf and
/// nsswitch.conf.
///
/// `ip netns exec` (how ``PacketShell`` starts CMD) runs the command in a private mount namespace
/// and bind-mounts every file of /etc/netns/NAME over /etc's file of that name: whatever reads
/// /etc/resolv.conf — glibc, musl, a static Go binary, dig — reads netsim's, and the bind mounts
/// die with the command's mount namespace (nothing to unmount on a crash). nsswitch.conf is the
/// host's with its `hosts:` line made `files dns`, so glibc asks DNS (and not systemd-resolved's
/// or mDNS's NSS modules, which would answer from the host's namespace). Removed on ``remove()``;
/// a crashed shell's directory is removed by ``sweepStale()`` at the next start.
public struct NamespaceResolverFiles: Sendable {
    public static let root = "/etc/netns"
    public let directory: String
    private let onInterrupt: UInt64

    /// Writes the files for `namespace`: one `nameserver`, netsim's DNS server.
    public init(namespace: NamespaceName, nameserver: String) throws {
        let directory = "\(Self.root)/\(namespace)"
        self.directory = directory
        // `netsim run` interrupted removes them too, even while they are written (they waited
        // for the next run's sweep).
        onInterrupt = try InterruptCleanup.create(.resolverFiles, undo: { try? FileManager.default.removeItem(atPath: directory) }) {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                let resolv = """
                    # netsim shell: every lookup goes to netsim's DNS server on NETSIM_HOST (through the link)
                    nameserver \(nameserver)

                    """
                try resolv.write(toFile: directory + "/resolv.conf", atomically: true, encoding: .utf8)
                try Self.nsswitch().write(toFile: directory + "/nsswitch.conf", atomically: true, encoding: .utf8)
            } catch {
                try? FileManager.default.removeItem(atPath: directory)
                throw PacketPathError.missing("cannot write \(directory)/resolv.conf: \(error.localizedDescription)")
            }
        }.key
    }

    /// The host's nsswitch.conf with `hosts: files dns` (a minimal one when there is none).
    static func nsswitch() -> String {
        let host = (try? String(contentsOfFile: "/etc/nsswitch.conf", encoding: .utf8)) ?? ""
        var lines = host.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            .filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("hosts:") }
        if lines.last == "" { lines.removeLast() }
        lines.append("hosts: files dns")
        return lines.joined(separator: "\n") + "\n"
    }

    public func remove() {
        InterruptCleanup.unregister(onInterrupt)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Removes the /etc/netns directories of `netsim-…` namespaces whose owner is no longer
    /// running; returns their names.
    @discardableResult
    public static func sweepStale() -> [String] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: root) else { return [] }
        var removed: [String] = []
        for entry in entries.sorted() {
            guard let name = NamespaceName(parsing: entry), !name.ownerIsAlive else { continue }
            if (try? FileManager.default.removeItem(atPath: "\(root)/\(entry)")) != nil { removed.append(entry) }
        }
        return removed
    }
}
#endif
