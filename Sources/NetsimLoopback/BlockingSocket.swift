#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import NetsimCore

/// What a plain client socket saw, in the terms netsim's tests and reports speak.
public enum SocketFailure: Error, Equatable, CustomStringConvertible {
    case refused
    case reset
    case timedOut
    case brokenPipe
    case other(errno: Int32)

    init(errno code: Int32) {
        switch code {
        case ECONNREFUSED: self = .refused
        case ECONNRESET: self = .reset
        case EAGAIN, EWOULDBLOCK, ETIMEDOUT, EINPROGRESS: self = .timedOut
        case EPIPE: self = .brokenPipe
        default: self = .other(errno: code)
        }
    }

    public var description: String {
        switch self {
        case .refused: "connection refused"
        case .reset: "connection reset by peer"
        case .timedOut: "timed out"
        case .brokenPipe: "broken pipe"
        case .other(let code): String(cString: strerror(code))
        }
    }
}

/// A blocking TCP socket, the way a plain client (or a test server) uses one.
///
/// Deliberately not NIO: tests and benchmarks need to see exactly what a client's socket sees
/// (EOF, ECONNRESET, ECONNREFUSED, silence), and measuring code must not share the relay's loops.
// `@unchecked Sendable`: the descriptor is immutable; the open/closed state is behind a lock.
public final class BlockingSocket: @unchecked Sendable {
    public let fd: Int32
    private var closed = false
    private let lock = NSLock()

    init(fd: Int32) {
        self.fd = fd
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        disableSIGPIPE(fd)
    }

    deinit { close() }

    /// Connects to an IPv4 or IPv6 literal (or localhost). Throws ``SocketFailure``.
    public static func connect(to endpoint: Endpoint, timeout: Duration = .seconds(5)) throws -> BlockingSocket {
        var address = try SocketAddressStorage(endpoint)
        let fd = socket(address.family, streamSocketType, 0)
        guard fd >= 0 else { throw SocketFailure(errno: errno) }
        let sock = BlockingSocket(fd: fd)
        // Linux applies SO_SNDTIMEO to connect(2); Apple platforms ignore it there (a loopback
        // connect is answered at once either way).
        sock.setTimeout(SO_SNDTIMEO, timeout)
        let result = address.withSockAddr { posixConnect(fd, $0, $1) }
        if result != 0 { throw SocketFailure(errno: errno) }
        sock.setTimeout(SO_SNDTIMEO, nil)
        return sock
    }

    /// Sends everything, or throws what the socket reported.
    public func send(_ bytes: some Collection<UInt8>) throws {
        try Array(bytes).withUnsafeBytes { try send(raw: $0) }
    }

    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    public func send(raw buffer: UnsafeRawBufferPointer) throws {
        try ensureOpen()
        var offset = 0
        while offset < buffer.count {
            let n = posixSend(fd, buffer.baseAddress! + offset, buffer.count - offset, noSignalSendFlags)
            if n < 0 {
                if errno == EINTR { continue }
                throw SocketFailure(errno: errno)
            }
            offset += n
        }
    }

    /// Receives up to `maximum` bytes. An empty result means EOF (the peer sent FIN).
    /// Throws `.timedOut` when nothing arrived within `timeout`, `.reset` on RST.
    public func receive(maximum: Int = 65536, timeout: Duration? = .seconds(10)) throws -> [UInt8] {
        try ensureOpen()
        setTimeout(SO_RCVTIMEO, timeout)
        var buffer = [UInt8](repeating: 0, count: maximum)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, maximum, 0) }
            if n < 0 {
                if errno == EINTR { continue }
                throw SocketFailure(errno: errno)
            }
            return Array(buffer[0..<n])
        }
    }

    /// Receives into a caller's buffer (for bulk transfers without copying). Returns 0 on EOF.
    public func receive(into buffer: UnsafeMutableRawBufferPointer, timeout: Duration? = .seconds(10)) throws -> Int {
        try ensureOpen()
        setTimeout(SO_RCVTIMEO, timeout)
        while true {
            let n = recv(fd, buffer.baseAddress, buffer.count, 0)
            if n < 0 {
                if errno == EINTR { continue }
                throw SocketFailure(errno: errno)
            }
            return n
        }
    }

    /// Receives exactly `count` bytes; throws if the stream ends first.
    public func receive(exactly count: Int, timeout: Duration? = .seconds(10)) throws -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(count)
        while result.count < count {
            let chunk = try receive(maximum: min(65536, count - result.count), timeout: timeout)
            if chunk.isEmpty { throw SocketFailure.other(errno: ENODATA) }
            result += chunk
        }
        return result
    }

    /// Reads until EOF and returns everything.
    public func receiveToEnd(timeout: Duration? = .seconds(10)) throws -> [UInt8] {
        var result: [UInt8] = []
        while true {
            let chunk = try receive(timeout: timeout)
            if chunk.isEmpty { return result }
            result += chunk
        }
    }

    /// Sends FIN (half-close); reading stays possible.
    public func shutdownWrite() { ifOpen { shutdown(fd, Int32(SHUT_WR)) } }

    /// Shuts both directions down without closing: threads blocked on the socket wake up.
    public func shutdownBoth() { ifOpen { shutdown(fd, Int32(SHUT_RDWR)) } }

    private func ensureOpen() throws {
        if lock.withLock({ closed }) { throw SocketFailure.other(errno: EBADF) }
    }

    /// Runs `body` only while the fd is still ours (never on a number the kernel reused).
    private func ifOpen(_ body: () -> Void) {
        lock.lock()
        defer { lock.unlock() }
        if !closed { body() }
    }

    /// Closes with RST instead of FIN (SO_LINGER with zero timeout).
    public func reset() {
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        close()
    }

    public func close() {
        let shouldClose = lock.withLock { () -> Bool in
            defer { closed = true }
            return !closed
        }
        if shouldClose { posixClose(fd) }
    }

    public func setBuffer(receive: Int? = nil, send: Int? = nil) {
        if var size = receive.map(Int32.init) { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, 4) }
        if var size = send.map(Int32.init) { setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, 4) }
    }

    private func setTimeout(_ option: Int32, _ timeout: Duration?) {
        let ns = timeout?.nanoseconds ?? 0
        var tv = socketTimeval(nanoseconds: ns)
        setsockopt(fd, SOL_SOCKET, option, &tv, socklen_t(MemoryLayout<timeval>.size))
    }
}
