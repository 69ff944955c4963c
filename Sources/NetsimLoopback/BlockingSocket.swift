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
///
/// A socket closed while another thread still uses it (a test's reader thread, a server's
/// handler) stays open until that use ends: the descriptor's number is never freed under a
/// system call about to be made on it. Freed at once, the kernel hands the number to the next
/// socket opened — in a test run, most likely a relay's — and the late `recv(2)` reads that
/// socket's bytes: the relay loses them, and a debug build of SwiftNIO asserts on the empty
/// read its readiness event then finds. The kernel itself keeps a socket alive the same way
/// while a call is in it, so a close during a blocked `recv(2)` behaves as before.
// `@unchecked Sendable`: the descriptor is immutable; the open/closed state is behind a lock.
public final class BlockingSocket: @unchecked Sendable {
    /// The descriptor, for options and polls by the socket's owner while it holds the socket open.
    public let fd: Int32
    private var closed = false
    /// System calls in progress on ``fd``; a close waits for the last to return.
    private var users = 0
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
        setTimeout(fd, SO_SNDTIMEO, timeout)
        let result = address.withSockAddr { posixConnect(fd, $0, $1) }
        if result != 0 { throw SocketFailure(errno: errno) }
        setTimeout(fd, SO_SNDTIMEO, nil)
        return sock
    }

    /// Sends everything, or throws what the socket reported.
    public func send(_ bytes: some Collection<UInt8>) throws {
        try Array(bytes).withUnsafeBytes { try send(raw: $0) }
    }

    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    public func send(raw buffer: UnsafeRawBufferPointer) throws {
        try using { fd in
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
    }

    /// Receives up to `maximum` bytes. An empty result means EOF (the peer sent FIN).
    /// Throws `.timedOut` when nothing arrived within `timeout`, `.reset` on RST.
    public func receive(maximum: Int = 65536, timeout: Duration? = .seconds(10)) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: maximum)
        let count = try buffer.withUnsafeMutableBytes { try receive(into: $0, timeout: timeout) }
        return Array(buffer[0..<count])
    }

    /// Receives into a caller's buffer (for bulk transfers without copying). Returns 0 on EOF.
    public func receive(into buffer: UnsafeMutableRawBufferPointer, timeout: Duration? = .seconds(10)) throws -> Int {
        try using { fd in
            Self.setTimeout(fd, SO_RCVTIMEO, timeout)
            while true {
                let n = recv(fd, buffer.baseAddress, buffer.count, 0)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw SocketFailure(errno: errno)
                }
                return n
            }
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
    public func shutdownWrite() { _ = try? using { shutdown($0, Int32(SHUT_WR)) } }

    /// Shuts both directions down without closing: threads blocked on the socket wake up.
    public func shutdownBoth() { _ = try? using { shutdown($0, Int32(SHUT_RDWR)) } }

    /// Runs `body` with the descriptor while the socket is open (throws EBADF once closed); a
    /// ``close()`` meanwhile takes effect when the last such call returns.
    func using<T>(_ body: (Int32) throws -> T) throws -> T {
        try lock.withLock {
            if closed { throw SocketFailure.other(errno: EBADF) }
            users += 1
        }
        defer {
            let last = lock.withLock { () -> Bool in
                users -= 1
                return closed && users == 0
            }
            if last { posixClose(fd) }
        }
        return try body(fd)
    }

    /// Closes with RST instead of FIN (SO_LINGER with zero timeout).
    public func reset() {
        _ = try? using { fd in
            var option = linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        }
        close()
    }

    /// Closes the socket, or, while another thread's call is in it, marks it closed (nothing new
    /// starts on it) and leaves the close to that call's end.
    public func close() {
        let now = lock.withLock { () -> Bool in
            defer { closed = true }
            return !closed && users == 0
        }
        if now { posixClose(fd) }
    }

    public func setBuffer(receive: Int? = nil, send: Int? = nil) {
        _ = try? using { fd in
            if var size = receive.map(Int32.init) { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, 4) }
            if var size = send.map(Int32.init) { setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, 4) }
        }
    }

    private static func setTimeout(_ fd: Int32, _ option: Int32, _ timeout: Duration?) {
        let ns = timeout?.nanoseconds ?? 0
        var tv = socketTimeval(nanoseconds: ns)
        setsockopt(fd, SOL_SOCKET, option, &tv, socklen_t(MemoryLayout<timeval>.size))
    }
}
