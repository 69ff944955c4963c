/// A capture file read into TCP flows: the input of replay and profile.
public struct Capture: Sendable {
    public var path: String
    /// libpcap's name for the link type.
    public var linkTypeName: String
    public var snapshotLength: Int
    public var packetCount: Int
    public var flows: [TCPFlow]
    /// Packets that carried no usable TCP segment, by reason.
    public var skipped: [String: Int]
    /// TCP segments whose payload the snaplen cut short.
    public var truncatedSegments: Int
    /// The longest packet kept of those cut: the snaplen in force. The file header's may be
    /// unset (editcap -s writes 0) or not the one used.
    public var cutLength = 0
    /// The first packet's time (any packet, as Wireshark's relative times count from it).
    public var firstTimestamp: Int64?
    /// Packets stamped earlier than the packet before them: the clock was stepped while the
    /// capture ran (NTP), or files were merged out of order.
    public var stampedBackwards = 0
    /// libpcap's words when the file ends in the middle of a packet after whole ones (a capture
    /// killed while it wrote, a full disk): the packets before are used, as tshark does.
    public var endsCut: String?

    /// Reads a pcap or pcapng file. Throws a ``PcapError`` naming the problem for a missing,
    /// empty, truncated, damaged or non-capture file and for an unsupported link type.
    public static func load(path: String) throws -> Capture {
        let reader = try PcapFileReader(path: path)
        defer { reader.close() }
        guard let link = LinkLayer(dlt: reader.linkType) else {
            throw PcapError(.unsupportedLinkType, "\(path): link type \(LinkLayer.name(of: reader.linkType)) is not supported; netsim reads \(LinkLayer.supportedNames)")
        }
        var capture = Capture(
            path: path, linkTypeName: LinkLayer.name(of: reader.linkType), snapshotLength: reader.snapshotLength,
            packetCount: 0, flows: [], skipped: [:], truncatedSegments: 0)
        var table: [FlowKey: Int] = [:]
        var latest: Int64?
        while let packet = try capture.nextPacket(from: reader) {
            capture.packetCount += 1
            if let latest, packet.timestamp < latest { capture.stampedBackwards += 1 }
            latest = max(latest ?? packet.timestamp, packet.timestamp)
            if capture.firstTimestamp == nil { capture.firstTimestamp = packet.timestamp }
            guard let start = link.ipOffset(in: packet.data) else {
                capture.skipped[SkipReason.notIP.rawValue, default: 0] += 1
                continue
            }
            switch SegmentDecoder.decode(packet.data, from: start, time: packet.timestamp) {
            case .failure(let skip):
                capture.skipped[skip.reason.rawValue, default: 0] += 1
            case .success(let segment):
                if segment.isTruncated {
                    capture.truncatedSegments += 1
                    capture.cutLength = max(capture.cutLength, packet.data.count)
                }
                let key = FlowKey(segment.source, segment.destination)
                if let index = table[key], !capture.flows[index].isNewConnection(segment) {
                    capture.flows[index].add(segment)
                } else {
                    var flow = TCPFlow(number: capture.flows.count + 1, first: segment)
                    flow.add(segment)
                    table[key] = capture.flows.count
                    capture.flows.append(flow)
                }
            }
        }
        for index in capture.flows.indices { capture.flows[index].finish() }
        return capture
    }

    /// The reader's next packet; nil at the end, and at a cut end after whole packets (noted).
    /// A file cut before its first whole packet stays an error: there is nothing to use.
    private mutating func nextPacket(from reader: PcapFileReader) throws -> CapturedPacket? {
        do {
            return try reader.next()
        } catch let error as PcapError where error.kind == .truncated && packetCount > 0 {
            // libpcap's own words, out of "PATH: the file is truncated (libpcap: …)".
            let words = error.message.components(separatedBy: "(libpcap: ").last ?? error.message
            endsCut = "libpcap: " + (words.hasSuffix(")") ? String(words.dropLast()) : words)
            return nil
        }
    }

    /// Things a reader should know: a cut end, cut packets, skipped packets, bytes never captured.
    public var notes: [String] {
        var notes: [String] = []
        if let endsCut {
            notes.append("the file ends in the middle of a packet, after \(packetCount) whole one\(packetCount == 1 ? "" : "s"), which are used (\(endsCut); a capture stopped while it wrote leaves this)")
        }
        if stampedBackwards > 0 {
            notes.append("\(stampedBackwards) packet\(stampedBackwards == 1 ? " is" : "s are") stamped earlier than a packet before \(stampedBackwards == 1 ? "it" : "them") (a clock stepped during the capture, or files merged out of order): round trips that come out negative are left out, and gaps are measured from the latest time seen")
        }
        if truncatedSegments > 0 {
            let bytes = flows.reduce(0) { $0 + $1.request.cutBySnaplen + $1.response.cutBySnaplen }
            notes.append("\(truncatedSegments) TCP segment\(truncatedSegments == 1 ? " was" : "s were") cut short by the capture's snaplen (\(cutLength) bytes); their \(bytes) missing payload bytes are zero-filled")
        }
        for (reason, count) in skipped.sorted(by: { $0.key < $1.key }) where reason != SkipReason.notIP.rawValue && reason != SkipReason.notTCP.rawValue {
            notes.append("\(count) packet\(count == 1 ? "" : "s") skipped: \(reason)")
        }
        for flow in flows {
            for (name, stream) in [("client → server", flow.request), ("server → client", flow.response)] {
                // Bytes the snaplen cut were on the wire and are counted above; these were not.
                let missing = stream.missing.reduce(0) { $0 + $1.count } + stream.missingAtEnd - stream.cutBySnaplen
                if missing > 0 { notes.append("flow \(flow.number) \(name): \(missing) bytes were never captured") }
                if stream.discardedSegments > 0 {
                    notes.append("flow \(flow.number) \(name): \(stream.discardedSegments) segments with implausible sequence numbers ignored")
                }
            }
        }
        return notes
    }
}

/// A flow's address pair, the same whichever way a packet travels.
struct FlowKey: Hashable {
    var low: PacketEndpoint
    var high: PacketEndpoint

    init(_ a: PacketEndpoint, _ b: PacketEndpoint) {
        if (a.address, a.port) <= (b.address, b.port) {
            (low, high) = (a, b)
        } else {
            (low, high) = (b, a)
        }
    }
}

private func <= (a: ([UInt8], UInt16), b: ([UInt8], UInt16)) -> Bool {
    if a.0 != b.0 { return a.0.lexicographicallyPrecedes(b.0) }
    return a.1 <= b.1
}
