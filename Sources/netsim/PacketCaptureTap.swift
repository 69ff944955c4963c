import NetsimPacket
import NetsimPcap

/// `netsim shell --pcap`: the packets at the namespace's interface, raw IP, into a pcap file
/// through libpcap (``PcapFileWriter``), flushed when the shell ends.
final class PacketCaptureTap: PacketTap {
    private let writer: PcapFileWriter

    init(path: String) throws { writer = try PcapFileWriter(path: path) }

    var path: String { writer.path }

    func record(_ packet: UnsafeRawBufferPointer, wallNanoseconds: Int64) {
        writer.write([UInt8](packet), nanoseconds: wallNanoseconds)
    }

    func finish() { writer.close() }
}
