import CPcap

/// A pcap file written through libpcap: `pcap_open_dead` + `pcap_dump_open` + `pcap_dump`.
///
/// Link type LINKTYPE_RAW (each record is an IPv4 or IPv6 packet, no link header: the relay
/// has no link layer to show) and nanosecond timestamps (the relay's clock has them, and two
/// events in the same microsecond keep their order). Not thread-safe: ``PcapRecorder`` locks.
public final class PcapFileWriter {
    /// Large enough for any packet netsim writes (a 64 KiB IP packet).
    public static let snapshotLength: Int32 = 262_144

    private let handle: OpaquePointer
    private var dumper: OpaquePointer?
    public let path: String

    /// - Parameter linkType: a DLT_ value; netsim records with DLT_RAW (tests write others).
    public init(path: String, linkType: Int32 = DLT_RAW, snapshotLength: Int32 = PcapFileWriter.snapshotLength) throws {
        self.path = path
        guard let handle = pcap_open_dead_with_tstamp_precision(linkType, snapshotLength, UInt32(PCAP_TSTAMP_PRECISION_NANO)) else {
            throw PcapError(.writeFailed, "\(path): libpcap could not start a capture for writing")
        }
        guard let dumper = pcap_dump_open(handle, path) else {
            let message = String(cString: pcap_geterr(handle))
            pcap_close(handle)
            throw PcapError(.cannotOpen, "cannot write the capture \(path): \(message)")
        }
        self.handle = handle
        self.dumper = dumper
        // The file header goes to the file now, as tcpdump's does: a recording with no packet
        // yet was 0 bytes, which readers call empty, not a capture.
        _ = pcap_dump_flush(dumper)
    }

    /// Writes one packet with a wall-clock timestamp in nanoseconds since the Unix epoch;
    /// `captureLength` keeps only that many bytes, as a short snaplen does (tests).
    public func write(_ packet: [UInt8], nanoseconds: Int64, captureLength: Int? = nil) {
        guard let dumper else { return }
        var header = pcap_pkthdr()
        header.ts.tv_sec = .init(nanoseconds / 1_000_000_000)
        // With nanosecond precision libpcap stores this field as nanoseconds (`Int32` on Apple platforms, `Int` on Linux).
        header.ts.tv_usec = .init(nanoseconds % 1_000_000_000)
        header.caplen = UInt32(min(captureLength ?? packet.count, packet.count))
        header.len = UInt32(packet.count)
        packet.withUnsafeBufferPointer { bytes in
            pcap_dump(UnsafeMutablePointer<UInt8>(dumper), &header, bytes.baseAddress)
        }
    }

    public func flush() {
        guard let dumper else { return }
        _ = pcap_dump_flush(dumper)
    }

    /// Flushes and closes the file; later writes are ignored.
    public func close() {
        guard let dumper else { return }
        pcap_dump_close(dumper)
        self.dumper = nil
        pcap_close(handle)
    }

    deinit { close() }
}
