#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import NetsimCore

/// A port whose connects are never answered: it listens with a backlog of 0 and one connection
/// it never accepts fills its queue, so Linux drops every further SYN and a connect waits out its
/// timeout, as to a host that is down or behind a firewall that drops. On loopback, with no
/// packet path or root.
public final class UnansweredPort: Sendable {
    public let port: Int
    private let fd: Int32
    /// The connection that fills the queue.
    private let filler: BlockingSocket

    public init() throws {
        (fd, port) = try boundLoopbackSocket()
        guard listen(fd, 0) == 0 else {
            let code = errno
            close(fd)
            throw SocketFailure.other(errno: code)
        }
        do { filler = try BlockingSocket.connect(to: Endpoint(host: "127.0.0.1", port: port)) } catch {
            close(fd)
            throw error
        }
    }

    /// 127.0.0.1 and the held port.
    public var endpoint: Endpoint { Endpoint(host: "127.0.0.1", port: port) }

    deinit {
        filler.close()
        close(fd)
    }
}
