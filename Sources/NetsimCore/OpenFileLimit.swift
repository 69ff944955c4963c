#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's limit on open files (`RLIMIT_NOFILE`), which bounds how many connections a
/// relay can hold: each costs it two descriptors.
///
/// Why netsim raises it: shells start programs with a soft limit of 1024 on most Linux systems
/// (256 on macOS) under a hard limit hundreds of times larger, which would stop a relay at about
/// 500 connections. `netsim` raises the soft limit to the hard one when it starts, as Go's
/// runtime and HAProxy do; the programs it starts inherit the raised limit.
public enum OpenFileLimit {
    /// The soft and hard limits now.
    public static var current: (soft: UInt64, hard: UInt64) {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return (1024, 1024) }
        return (UInt64(limit.rlim_cur), UInt64(limit.rlim_max))
    }

    /// Raises the soft limit to the hard limit; returns both afterwards.
    @discardableResult
    public static func raise() -> (soft: UInt64, hard: UInt64) {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return (1024, 1024) }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            // macOS refuses more than OPEN_MAX (10240) even when the hard limit says "unlimited".
            #if canImport(Darwin)
            raised.rlim_cur = min(limit.rlim_max, rlim_t(OPEN_MAX))
            #else
            raised.rlim_cur = limit.rlim_max
            #endif
            if setrlimit(resource, &raised) == 0 { limit = raised }
        }
        return (UInt64(limit.rlim_cur), UInt64(limit.rlim_max))
    }

    #if canImport(Glibc)
    private static let resource = Int32(RLIMIT_NOFILE.rawValue)
    #else
    private static let resource = RLIMIT_NOFILE
    #endif
}
