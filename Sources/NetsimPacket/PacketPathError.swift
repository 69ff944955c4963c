import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Why the packet path could not start or went wrong, in one line a person can act on.
public enum PacketPathError: Error, Equatable, CustomStringConvertible {
    /// Something the machine lacks (root, /dev/net/tun, iproute2): the command exits 2.
    case missing(String)
    /// A system call failed: what was being done and errno.
    case system(String, Int32)
    /// An `ip` command failed: the command and what it printed.
    case command(String, String)
    /// Every address of 198.18.0.0/15 is in use.
    case noFreeAddresses

    public var description: String {
        switch self {
        case .missing(let what):
            return what
        case .system(let what, let code):
            return "\(what): \(String(cString: strerror(code)))"
        case .command(let command, let output):
            return "`\(command)` failed: \(output.trimmingCharacters(in: .whitespacesAndNewlines))"
        case .noFreeAddresses:
            return "every /30 of 198.18.0.0/15 is in use on this host; stop some netsim shells"
        }
    }
}
