import CPcap
import Foundation
import NetsimCore

/// One record of a capture file, as libpcap hands it over.
public struct CapturedPacket: Sendable {
    /// Nanoseconds since the Unix epoch.
    public var timestamp: Int64
    /// The bytes captured (possibly fewer than were on the wire: see ``originalLength``).
    public var data: [UInt8]
    /// The packet's length on the wire; larger than `data.count` when the snaplen cut it short.
    public var originalLength: Int
}

/// Reads pcap and pcapng files with libpcap (`pcap_open_offline` + `pcap_next_ex`): no
/// hand-written file parsing, so every format and byte order libpcap knows is handled, and a
/// damaged file fails with libpcap's own description.
public final class PcapFileReader {
    public let path: String
    /// The DLT_ value libpcap reports (it maps the file's LINKTYPE_ to the local DLT_).
    public let linkType: Int32
    /// The capture's snapshot length: packets longer than this were cut.
    public let snapshotLength: Int
    private var handle: OpaquePointer?

    public init(path: String) throws {
        self.path = path
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw PcapError(.cannotOpen, "\(path): is a folder, not a capture file")
        }
        if let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int, size == 0 {
            throw PcapError(.truncated, "\(path): the file is empty, not a pcap or pcapng capture")
        }
        var errorBuffer = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE) + 1)
        guard let handle = pcap_open_offline_with_tstamp_precision(path, UInt32(PCAP_TSTAMP_PRECISION_NANO), &errorBuffer) else {
            let text = String(decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            // tshark reads a gzip-compressed capture and libpcap does not (QA 65): say what it is.
            if Self.startsWithGzipMagic(path) {
                throw PcapError(.notACapture, "\(path): it is gzip-compressed; libpcap reads captures uncompressed: gunzip -k \(ShellQuoting.quoted(path)), then give netsim the .pcap or .pcapng it leaves")
            }
            throw PcapError.fromLibpcap(text, path: path, reading: true)
        }
        self.handle = handle
        linkType = pcap_datalink(handle)
        snapshotLength = Int(pcap_snapshot(handle))
    }

    /// Whether the file begins with gzip's magic bytes (RFC 1952: 1f 8b).
    static func startsWithGzipMagic(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        return (try? handle.read(upToCount: 2)).map { Array($0) == [0x1F, 0x8B] } ?? false
    }

    /// The next packet, or nil at the end of the file. Throws when the file is damaged or ends in
    /// the middle of a record.
    public func next() throws -> CapturedPacket? {
        guard let handle else { return nil }
        var header: UnsafeMutablePointer<pcap_pkthdr>?
        var data: UnsafePointer<UInt8>?
        switch pcap_next_ex(handle, &header, &data) {
        case 1:
            guard let header, let data else { return nil }
            let h = header.pointee
            let count = Int(h.caplen)
            return CapturedPacket(
                timestamp: Int64(h.ts.tv_sec) &* 1_000_000_000 &+ Int64(h.ts.tv_usec),
                data: Array(UnsafeBufferPointer(start: data, count: count)),
                originalLength: max(Int(h.len), count))
        case -2:
            return nil
        default:
            let text = String(cString: pcap_geterr(handle))
            throw PcapError.fromLibpcap(text, path: path, reading: true)
        }
    }

    /// Every packet in the file.
    public func readAll() throws -> [CapturedPacket] {
        var packets: [CapturedPacket] = []
        while let packet = try next() { packets.append(packet) }
        return packets
    }

    public func close() {
        guard let handle else { return }
        pcap_close(handle)
        self.handle = nil
    }

    deinit { close() }
}
