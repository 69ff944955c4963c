#if canImport(Glibc)
import Glibc

/// A TUN device this process created: IP packets in and out through a file descriptor, no
/// link header (IFF_NO_PI).
///
/// Not persistent (no TUNSETPERSIST): the kernel deletes the device, and every address and
/// route on it, the moment the last descriptor closes, which includes this process dying in
/// any way at all. That is the packet path's first cleanup guarantee. The descriptor stays
/// attached to the device when the device moves to another network namespace, so one process
/// can read both sides (Mahimahi's design).
public final class TunDevice: @unchecked Sendable {
    public let name: String
    /// -1 once closed.
    public private(set) var descriptor: Int32

    /// TUNSETIFF from <linux/if_tun.h>: _IOW('T', 202, int).
    static let setInterface: UInt = 0x4004_54CA
    static let tunMode: Int16 = 0x0001      // IFF_TUN
    static let noPacketInfo: Int16 = 0x1000 // IFF_NO_PI
    /// IFNAMSIZ − 1.
    public static let maximumNameLength = 15

    /// Opens /dev/net/tun and creates the device `name` (non-blocking).
    public init(name: String) throws {
        precondition(name.utf8.count <= Self.maximumNameLength, "interface name too long: \(name)")
        let fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw PacketPathError.system("cannot open /dev/net/tun", errno) }
        var request = ifreq()
        withUnsafeMutableBytes(of: &request.ifr_ifrn.ifrn_name) { bytes in
            for (index, byte) in name.utf8.enumerated() { bytes[index] = byte }
        }
        request.ifr_ifru.ifru_flags = Self.tunMode | Self.noPacketInfo
        guard ioctl(fd, Self.setInterface, &request) == 0 else {
            let code = errno
            Glibc.close(fd)
            throw PacketPathError.system("cannot create the TUN device \(name)", code)
        }
        self.name = name
        descriptor = fd
    }

    /// One packet into `buffer`; nil when none is waiting.
    public func read(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        while true {
            let count = Glibc.read(descriptor, buffer.baseAddress, buffer.count)
            if count >= 0 { return count }
            if errno == EINTR { continue }
            return nil
        }
    }

    /// Writes one packet; false when the device refused it (its queue full, or it went away).
    @discardableResult
    public func write(_ packet: UnsafeRawBufferPointer) -> Bool {
        while true {
            let count = Glibc.write(descriptor, packet.baseAddress, packet.count)
            if count == packet.count { return true }
            if count < 0, errno == EINTR { continue }
            return false
        }
    }

    /// Closes the descriptor, which deletes the device with its addresses and routes.
    public func close() {
        guard descriptor >= 0 else { return }
        Glibc.close(descriptor)
        descriptor = -1
    }

    deinit { close() }
}
#endif
