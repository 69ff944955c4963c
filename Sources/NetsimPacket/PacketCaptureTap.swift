import Foundation
import NetsimPcap

/// `netsim shell --pcap`, `netsim run --pcap` on a packet link: the packets at the namespace's interface, raw IP, into a pcap file
/// through libpcap (``PcapFileWriter``), flushed within a second of each packet (``DelayedFlush``)
/// and closed when the shell ends.
public final class PacketCaptureTap: PacketTap, @unchecked Sendable {
    // `@unchecked Sendable`: the writer is only reached under `lock` (the path's thread records,
    // an interrupted `netsim run` finishes from its signal thread).
    private let writer: PcapFileWriter
    private let lock = NSLock()
    private var delayedFlush = DelayedFlush()

    public init(path: String) throws { writer = try PcapFileWriter(path: path) }

    public var path: String { writer.path }

    public func record(_ packet: UnsafeRawBufferPointer, wallNanoseconds: Int64) {
        lock.withLock {
            writer.write([UInt8](packet), nanoseconds: wallNanoseconds)
            delayedFlush.written { [weak self] in self?.flush() }
        }
    }

    private func flush() {
        lock.withLock {
            delayedFlush.flushed()
            writer.flush()  // nothing once finished: the writer is closed
        }
    }

    /// Closes the file (a whole pcap); later packets are not recorded.
    public func finish() { lock.withLock { writer.close() } }
}
