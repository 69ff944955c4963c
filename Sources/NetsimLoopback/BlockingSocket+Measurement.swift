#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import NetsimCore

// Reads for measurement loops (`netsim bench`, `netsim demo`): one recv(2) per call and no
// per-call setsockopt, so the measuring side adds as little as possible to what it measures
// (the socket's guard against a close meanwhile is two uncontended locks).
extension BlockingSocket {
    /// Bounds every later ``receiveAvailable(into:)`` and ``receiveAll(into:)`` (nil: no bound).
    public func setReceiveTimeout(_ timeout: Duration?) {
        let ns = timeout?.nanoseconds ?? 0
        var tv = socketTimeval(nanoseconds: ns)
        _ = try? using { setsockopt($0, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size)) }
    }

    /// Reads what is available (waiting for something, up to the receive timeout); 0 at EOF.
    /// Throws ``SocketFailure`` (`.timedOut` when the timeout passed, `.reset` on RST).
    public func receiveAvailable(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try using { fd in
            while true {
                let n = recv(fd, buffer.baseAddress, buffer.count, 0)
                if n >= 0 { return n }
                if errno == EINTR { continue }
                throw SocketFailure(errno: errno)
            }
        }
    }

    /// Fills `buffer` completely; false if the stream ended first.
    public func receiveAll(into buffer: UnsafeMutableRawBufferPointer) throws -> Bool {
        var offset = 0
        while offset < buffer.count {
            let n = try receiveAvailable(into: UnsafeMutableRawBufferPointer(rebasing: buffer[offset...]))
            if n == 0 { return false }
            offset += n
        }
        return true
    }
}

// Polling reads: a measuring thread that must never sleep (its own wake-up after a long idle
// would be part of what it measures) spins on recv(2) with MSG_DONTWAIT instead of blocking.
extension BlockingSocket {
    /// Fills `buffer` completely without ever blocking: spins on non-blocking reads until it is
    /// full, yielding the CPU between reads to any thread that waits for it. False if the stream
    /// ended first; throws ``SocketFailure/timedOut`` once the monotonic clock passes `deadline`
    /// (nanoseconds), and the socket's error if it fails.
    public func receiveAllPolling(into buffer: UnsafeMutableRawBufferPointer, deadline: Int64) throws -> Bool {
        try using { fd in
            var offset = 0
            while offset < buffer.count {
                let n = recv(fd, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_DONTWAIT))
                if n > 0 {
                    offset += n
                } else if n == 0 {
                    return false
                } else if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR {
                    if SystemClock().now() > deadline { throw SocketFailure.timedOut }
                    // Never sleeps, but lets a thread waiting for this CPU (the relay's, when the
                    // scheduler put it here) run at once instead of after this one's time slice.
                    sched_yield()
                } else {
                    throw SocketFailure(errno: errno)
                }
            }
            return true
        }
    }
}
