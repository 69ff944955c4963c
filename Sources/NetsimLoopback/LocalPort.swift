#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The local port a socket is bound to (getsockname); 0 if it cannot be read.
func localPort(of fd: Int32) -> Int {
    var bound = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    withUnsafeMutablePointer(to: &bound) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(fd, $0, &length) }
    }
    return withUnsafeBytes(of: bound) { raw -> Int in
        // sin_port and sin6_port sit at the same offset.
        Int(UInt16(bigEndian: raw.load(fromByteOffset: 2, as: UInt16.self)))
    }
}

extension BlockingSocket {
    /// The port this end of the connection uses (what the peer sees as its remote port).
    public var localPort: Int { NetsimLoopback.localPort(of: fd) }
}
