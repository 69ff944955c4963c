#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The local port a socket is bound to (getsockname): the kernel's choice after a bind to port 0.
public enum BoundPort {
    /// The port of `fd`'s local address, IPv4 or IPv6; nil if it cannot be read.
    public static func of(_ fd: Int32) -> Int? {
        var bound = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0, [AF_INET, AF_INET6].contains(Int32(bound.ss_family)) else { return nil }
        return withUnsafeBytes(of: bound) { raw in
            // sin_port and sin6_port sit at the same offset.
            Int(UInt16(bigEndian: raw.load(fromByteOffset: 2, as: UInt16.self)))
        }
    }
}
