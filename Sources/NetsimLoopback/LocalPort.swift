#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import NetsimCore

/// The local port a socket is bound to (getsockname); 0 if it cannot be read.
func localPort(of fd: Int32) -> Int { BoundPort.of(fd) ?? 0 }

extension BlockingSocket {
    /// The port this end of the connection uses (what the peer sees as its remote port).
    public var localPort: Int { NetsimLoopback.localPort(of: fd) }
}

/// Whether a fresh socket without `SO_REUSEADDR` can bind `endpoint` — false when any socket
/// (listening or merely bound) holds the port. The probe is closed at once.
public func portIsFree(_ endpoint: Endpoint) throws -> Bool {
    var address = try SocketAddressStorage(endpoint)
    let fd = socket(address.family, streamSocketType, 0)
    guard fd >= 0 else { throw SocketFailure.other(errno: errno) }
    defer { close(fd) }
    if address.withSockAddr({ bind(fd, $0, $1) }) == 0 { return true }
    if errno == EADDRINUSE { return false }
    throw SocketFailure.other(errno: errno)
}
