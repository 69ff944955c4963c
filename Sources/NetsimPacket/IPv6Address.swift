#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv6 address as the 16 bytes the packet carries.
public struct IPv6Address: Hashable, Sendable, CustomStringConvertible {
    public var bytes: [UInt8]

    public init(_ bytes: [UInt8]) {
        precondition(bytes.count == 16, "an IPv6 address is 16 bytes")
        self.bytes = bytes
    }

    /// Eight 16-bit groups, as written: `IPv6Address(groups: [0x2001, 2, 0, 5, 0, 0, 0, 1])`.
    public init(groups: [UInt16]) {
        precondition(groups.count == 8)
        self.init(groups.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] })
    }

    /// The canonical text form (RFC 5952, through inet_ntop), e.g. `2001:2:0:5::1`.
    public var description: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        bytes.withUnsafeBytes { raw in _ = inet_ntop(AF_INET6, raw.baseAddress, &text, socklen_t(text.count)) }
        return String(cString: text)
    }
}
