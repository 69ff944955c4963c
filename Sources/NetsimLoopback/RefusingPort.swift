#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import NetsimCore

/// A port bound on 127.0.0.1 but not listening: a connect to it is refused, and while this holds
/// it no other socket (another test's server) can take the port.
///
/// Why not a server started and stopped: its port is free again at once, and a test running
/// beside it may be handed the port for its own server; the connect then reaches that server
/// (a driver test got a 404 where it expected a refusal).
public final class RefusingPort: Sendable {
    public let port: Int
    private let fd: Int32

    public init() throws {
        (fd, port) = try boundLoopbackSocket()
    }

    /// 127.0.0.1 and the held port.
    public var endpoint: Endpoint { Endpoint(host: "127.0.0.1", port: port) }

    deinit { close(fd) }
}

/// A TCP socket bound to 127.0.0.1 on a port the system picks, and that port.
func boundLoopbackSocket() throws -> (Int32, Int) {
    let fd = socket(AF_INET, streamSocketType, 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard bound else {
        let code = errno
        close(fd)
        throw SocketFailure.other(errno: code)
    }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
}
