#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import NetsimCore

/// A TCP server on 127.0.0.1 with a free port, for tests, benchmarks and demos.
///
/// Each accepted connection is handed to `handler` on its own thread (or on the accept thread
/// when `threadPerConnection` is false, for servers that only hold connections).
/// ``stop()`` closes the listener and every connection it accepted.
// `@unchecked Sendable`: its connection list and stop flag are behind a lock; the rest is immutable.
public final class LoopbackServer: @unchecked Sendable {
    public let endpoint: Endpoint
    private let listenFD: Int32
    private let lock = NSLock()
    private var connections: [BlockingSocket] = []
    private var stopped = false
    /// The accept thread has closed the listening fd: its number may belong to another socket now.
    private var listenerClosed = false
    private var accepted = 0
    private let threadPerConnection: Bool

    public init(
        host: String = "127.0.0.1", port: Int = 0, backlog: Int32 = 4096, threadPerConnection: Bool = true,
        handler: @escaping @Sendable (BlockingSocket) -> Void
    ) throws {
        var address = try SocketAddressStorage(Endpoint(host: host, port: port))
        let fd = socket(address.family, streamSocketType, 0)
        guard fd >= 0 else { throw SocketFailure(errno: errno) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, 4)
        guard address.withSockAddr({ bind(fd, $0, $1) }) == 0, listen(fd, backlog) == 0 else {
            let code = errno
            posixClose(fd)
            throw SocketFailure(errno: code)
        }
        self.listenFD = fd
        self.endpoint = Endpoint(host: host, port: localPort(of: fd))
        self.threadPerConnection = threadPerConnection
        // The accept thread keeps the server alive until stop() makes accept(2) fail, and it
        // alone closes the listening fd: closed elsewhere, the number could be reused by the next
        // server's listener while this thread is about to call accept(2) on it.
        Thread { [self] in
            defer {
                lock.withLock {
                    listenerClosed = true
                    posixClose(listenFD)
                }
            }
            while let client = acceptOne() {
                if threadPerConnection {
                    Thread { [self] in
                        handler(client)
                        finished(client)
                    }.start()
                } else {
                    handler(client)
                }
            }
        }.start()
    }

    /// A handler returned: its thread was the socket's only user, so it is closed here. A handler
    /// must not hand its socket to a thread that outlives it.
    private func finished(_ socket: BlockingSocket) {
        lock.withLock { connections.removeAll { $0 === socket } }
        socket.close()
    }

    private func acceptOne() -> BlockingSocket? {
        while true {
            let fd = accept(listenFD, nil, nil)
            if fd >= 0 {
                let socket = BlockingSocket(fd: fd)
                let keep = lock.withLock { () -> Bool in
                    if stopped { return false }
                    connections.append(socket)
                    accepted += 1
                    return true
                }
                if !keep {
                    socket.close()
                    return nil
                }
                return socket
            }
            if errno == EINTR || errno == ECONNABORTED { continue }
            if errno == EMFILE || errno == ENFILE {
                usleep(10_000)
                if lock.withLock({ stopped }) { return nil }
                continue
            }
            return nil
        }
    }

    /// How many connections the server has accepted.
    public var acceptedCount: Int { lock.withLock { accepted } }

    /// Closes the listener and every accepted connection.
    public func stop() {
        let open = lock.withLock { () -> [BlockingSocket] in
            guard !stopped else { return [] }
            stopped = true
            return connections
        }
        // Wakes accept(2) (or makes the next call fail at once); the accept thread closes the fd
        // (unless an accept error ended it first).
        lock.withLock {
            if !listenerClosed { _ = shutdown(listenFD, Int32(SHUT_RDWR)) }
        }
        #if !os(Linux)
        // Apple platforms neither wake accept(2) nor fail it on shutdown(2) of a listening socket
        // (ENOTCONN): a connection does, which the accept thread, seeing `stopped`, closes.
        (try? BlockingSocket.connect(to: endpoint, timeout: .seconds(1)))?.close()
        #endif
        // Only shut connections down here: a handler blocked in recv(2) or send(2) wakes with EOF
        // or EPIPE, and its own thread closes the socket when it returns. Closing here instead
        // would free the fd number while the handler may still use it — and the kernel may
        // already have given that number to another test's socket.
        for connection in open {
            connection.shutdownBoth()
            if !threadPerConnection { connection.close() }
        }
    }
}

extension LoopbackServer {
    /// Echoes every byte back and half-closes after the client does; listens on `host` (loopback
    /// unless a test made another address, such as a `netsim shell`'s host side).
    public static func echo(host: String = "127.0.0.1") throws -> LoopbackServer {
        try LoopbackServer(host: host) { socket in
            while let chunk = try? socket.receive(timeout: .seconds(120)), !chunk.isEmpty {
                if (try? socket.send(chunk)) == nil { return }
            }
            socket.shutdownWrite()
        }
    }
}
