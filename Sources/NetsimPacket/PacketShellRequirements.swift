import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What `netsim shell` needs from the machine, checked before anything is created so that a
/// missing piece is one line saying which, not a half-built namespace.
public enum PacketShellRequirements {
    /// The first thing missing, as the line to print; nil when the packet path can run here.
    public static func missing() -> String? {
        #if os(Linux)
        if geteuid() != 0 {
            return "needs root (it creates a network namespace and TUN devices): run it with sudo"
        }
        if !FileManager.default.fileExists(atPath: "/dev/net/tun") {
            return "needs /dev/net/tun (load the tun module; in a container, pass --device /dev/net/tun)"
        }
        if IPRoute.executable == nil {
            return "needs iproute2's `ip` (apt-get install -y iproute2)"
        }
        return nil
        #else
        return "needs Linux (network namespaces and TUN devices); use netsim relay here"
        #endif
    }
}
