import NetsimCore

/// Why a capture could not be written or read. Every message names the file and says what was
/// wrong in words a person can act on; the CLI prints it and exits non-zero.
public struct PcapError: Error, CustomStringConvertible, Equatable, Sendable {
    public enum Kind: String, Sendable {
        /// The file could not be opened or created (missing, permissions).
        case cannotOpen
        /// libpcap does not recognise the file (not pcap or pcapng, or a broken header).
        case notACapture
        /// The file ends in the middle of a header or a packet.
        case truncated
        /// A record inside the file is damaged.
        case corrupt
        /// The capture's link type is not one netsim decodes.
        case unsupportedLinkType
        /// The capture holds nothing netsim can use (no TCP, or not the flows asked for).
        case nothingToUse
        /// Writing failed (disk full, closed file).
        case writeFailed
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }

    /// How to split a pcapng of several link types into pcaps netsim reads, for interface 0. Two
    /// steps: tshark's filtered pcapng keeps every interface's description, the empty one's too,
    /// so libpcap still refuses it, and tshark will not write it as pcap; editcap, told the link
    /// type, will (QA 52: the one-step hint left a file that failed the same way, and for an
    /// input named part0.pcapng it named the input as the output).
    static func splitHint(_ path: String) -> String {
        let file = path.split(separator: "/").last.map(String.init) ?? path
        let base = file.lowercased().hasSuffix(".pcapng") ? String(file.dropLast(".pcapng".count)) : file
        let folder = path.hasSuffix(file) ? String(path.dropLast(file.count)) : ""
        let part = ShellQuoting.quoted("\(folder)\(base)-if0")
        return "split it by interface, e.g. for interface 0: tshark -r \(ShellQuoting.quoted(path)) -Y 'frame.interface_id == 0' -w \(part).pcapng "
            + "&& editcap -T TYPE -F pcap \(part).pcapng \(part).pcap, TYPE the interface's link type as editcap names it "
            + "(rawip, ether, linux-sll; capinfos \(ShellQuoting.quoted(path)) lists each interface's); then give netsim the part (the same with 1 for interface 1, and so on)"
    }

    /// Classifies libpcap's own error text (it has no error codes for these).
    static func fromLibpcap(_ text: String, path: String, reading: Bool) -> PcapError {
        let lower = text.lowercased()
        if reading, lower.contains("different from the type of the first interface") {
            // A valid pcapng (mergecap of an Ethernet and a cooked capture, a multi-interface
            // dumpcap) that libpcap cannot read as one link type.
            return PcapError(.unsupportedLinkType, "\(path): its interfaces have different link types, which libpcap reads one at a time (libpcap: \(text)); \(splitHint(path))")
        }
        let kind: Kind
        if lower.contains("truncated") {
            kind = .truncated
        } else if lower.contains("no such file") || lower.contains("permission denied") || lower.contains("is a directory") {
            kind = .cannotOpen
        } else if lower.contains("unknown file format") || lower.contains("bad dump file format") || lower.contains("unsupported") && reading {
            kind = .notACapture
        } else {
            kind = reading ? .corrupt : .writeFailed
        }
        let what: String
        switch kind {
        case .truncated: what = "the file is truncated"
        case .cannotOpen: what = "cannot open it"
        case .notACapture: what = "it is not a pcap or pcapng capture"
        case .corrupt: what = "the file is damaged"
        default: what = "cannot write it"
        }
        return PcapError(kind, "\(path): \(what) (libpcap: \(text))")
    }
}
