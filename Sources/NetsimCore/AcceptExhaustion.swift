#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Which failed accepts make a listener wait before it accepts again: the process or the system
/// out of descriptors, buffers or memory. A listener that retries at once spins a core, since
/// its socket stays readable while connections queue; every listener netsim makes waits
/// ``wait`` after one of these (the relay's own `AcceptBackoff`; the others NIO's
/// `AcceptBackoffHandler`) and retries any other failure (a client that gave up before its
/// accept, `ECONNABORTED`) at once.
public enum AcceptExhaustion {
    public static let wait = Duration.seconds(1)

    /// True for `EMFILE`, `ENFILE`, `ENOBUFS` and `ENOMEM`.
    public static func isExhaustion(errno code: Int32) -> Bool {
        [EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(code)
    }
}
