#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import NetsimCore

// Reads for measurement loops (`netsim bench`, `netsim demo`): one recv(2) per call and no
// per-call setsockopt, so the measuring side adds as little as possible to what it measures.
extension BlockingSocket {
    /// Bounds every later ``receiveAvailable(into:)`` and ``receiveAll(into:)`` (nil: no bound).
    public func setReceiveTimeout(_ timeout: Duration?) {
        let ns = timeout?.nanoseconds ?? 0
        var tv = socketTimeval(nanoseconds: ns)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Reads what is available (waiting for something, up to the receive timeout); 0 at EOF.
    /// Throws ``SocketFailure`` (`.timedOut` when the timeout passed, `.reset` on RST).
    public func receiveAvailable(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while true {
            let n = recv(fd, buffer.baseAddress, buffer.count, 0)
            if n >= 0 { return n }
            if errno == EINTR { continue }
            throw SocketFailure(errno: errno)
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
