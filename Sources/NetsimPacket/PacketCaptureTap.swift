import NetsimPcap

/// `netsim shell --pcap`, `netsim run --pcap` on a packet link: the packets at the namespace's interface, raw IP, into a pcap file
/// through libpcap (``PcapFileWriter``), flushed when the shell ends.
public final class PacketCaptureTap: PacketTap {
    private let writer: PcapFileWriter

    public init(path: String) throws { writer = try PcapFileWriter(path: path) }

    public var path: String { writer.path }

    public func record(_ packet: UnsafeRawBufferPointer, wallNanoseconds: Int64) {
        writer.write([UInt8](packet), nanoseconds: wallNanoseconds)
    }

    public func finish() { writer.close() }
}
