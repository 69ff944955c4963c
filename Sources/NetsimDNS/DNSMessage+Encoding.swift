extension DNSMessage {
    /// The wire bytes. A name (or a name's tail) written before is replaced by a pointer to it
    /// (RFC 1035 §4.1.4), so an answer's name costs two bytes after its question.
    public func encoded() -> [UInt8] {
        var writer = DNSWriter()
        writer.u16(id)
        var flags: UInt16 = UInt16(opcode & 0x0F) << 11 | UInt16(rcode.rawValue)
        if isResponse { flags |= 0x8000 }
        if isAuthoritative { flags |= 0x0400 }
        if isTruncated { flags |= 0x0200 }
        if recursionDesired { flags |= 0x0100 }
        if recursionAvailable { flags |= 0x0080 }
        writer.u16(flags)
        for count in [questions.count, answers.count, authority.count, additional.count] { writer.u16(UInt16(count)) }
        for question in questions {
            writer.name(question.name)
            writer.u16(question.type.rawValue)
            writer.u16(question.dnsClass)
        }
        for record in answers + authority + additional {
            writer.name(record.name)
            writer.u16(record.type.rawValue)
            writer.u16(record.dnsClass)
            writer.u16(UInt16(record.ttl >> 16))
            writer.u16(UInt16(record.ttl & 0xFFFF))
            writer.u16(UInt16(record.data.count))
            writer.bytes += record.data
        }
        return writer.bytes
    }

    /// This response as it may go over UDP: itself when it fits in `limit` bytes, else its
    /// header and questions with TC set, which tells the client to ask again over TCP.
    public func fittingUDP(limit: Int = DNSMessage.udpLimit) -> [UInt8] {
        let whole = encoded()
        if whole.count <= limit { return whole }
        var truncated = self
        truncated.isTruncated = true
        truncated.answers = []
        truncated.authority = []
        truncated.additional = []
        return truncated.encoded()
    }

    /// The response to this query: same ID, opcode, RD and questions; QR set.
    public func response(rcode: DNSResponseCode, answers: [DNSRecord] = [], authoritative: Bool = true) -> DNSMessage {
        DNSMessage(id: id, isResponse: true, opcode: opcode, isAuthoritative: authoritative, recursionDesired: recursionDesired,
                   recursionAvailable: false, rcode: rcode, questions: questions, answers: answers)
    }
}

struct DNSWriter {
    var bytes: [UInt8] = []
    /// Name suffixes already written, as written (case kept, so a message reads back exactly as
    /// it was made), and where (pointers reach the first 16 KiB).
    private var written: [String: Int] = [:]

    mutating func u16(_ value: UInt16) {
        bytes.append(UInt8(value >> 8))
        bytes.append(UInt8(value & 0xFF))
    }

    mutating func name(_ name: String) {
        var labels = name.split(separator: ".", omittingEmptySubsequences: true).map { Array($0.utf8.prefix(63)) }
        while !labels.isEmpty {
            let suffix = labels.map { String(decoding: $0, as: UTF8.self) }.joined(separator: ".")
            if let offset = written[suffix] {
                u16(0xC000 | UInt16(offset))
                return
            }
            if bytes.count < 0x4000 { written[suffix] = bytes.count }
            let label = labels.removeFirst()
            bytes.append(UInt8(label.count))
            bytes += label
        }
        bytes.append(0)
    }
}
