#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// The few places where Linux's and Apple's C libraries differ for the blocking sockets, in one
// file (docs/portability.md). Free functions with their own names: inside `BlockingSocket`,
// `connect`, `send` and `close` would mean its own methods.

/// `SOCK_STREAM` as `socket(2)` takes it (an enum in Glibc, an `Int32` elsewhere).
public let streamSocketType: Int32 = {
    #if canImport(Glibc)
    Int32(SOCK_STREAM.rawValue)
    #else
    SOCK_STREAM
    #endif
}()

/// Flags for `send(2)` that keep a write to a closed peer from killing the process with SIGPIPE:
/// `MSG_NOSIGNAL` on Linux; Apple platforms have no such flag and use ``disableSIGPIPE(_:)``.
let noSignalSendFlags: Int32 = {
    #if os(Linux)
    Int32(MSG_NOSIGNAL)
    #else
    0
    #endif
}()

/// On Apple platforms, `SO_NOSIGPIPE` on the socket does what `MSG_NOSIGNAL` does per call on Linux.
func disableSIGPIPE(_ fd: Int32) {
    #if canImport(Darwin)
    var one: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
    #endif
}

func posixConnect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
    connect(fd, address, length)
}

func posixSend(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int, _ flags: Int32) -> Int {
    send(fd, bytes, count, flags)
}

@discardableResult
func posixClose(_ fd: Int32) -> Int32 {
    close(fd)
}

/// A `timeval` for socket timeouts (`tv_usec` is an `Int32` on Apple platforms, an `Int` on Linux).
func socketTimeval(nanoseconds ns: Int64) -> timeval {
    var tv = timeval()
    tv.tv_sec = .init(ns / 1_000_000_000)
    tv.tv_usec = .init((ns % 1_000_000_000) / 1000)
    return tv
}
