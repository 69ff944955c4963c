import NIOCore

/// Before a stand-in's request parser: bytes above 0x7F in a request head become `%XX`, as a
/// browser would have sent them. SwiftNIO's parser (llhttp, strict) refuses raw UTF-8 in a
/// request target, which curl sends as typed (`/p?q=ü`) and servers such as nginx accept; a
/// portal then took the request for "not HTTP" and broke it as it breaks TLS (with `tls=hang`,
/// the client waited forever). The parsed request only feeds the stand-in's answer and the log:
/// nothing is forwarded. Bodies pass as they are (their length counts); a pipelined head in
/// the same read as a body is not escaped.
struct RequestHeadEscaper {
    private var inHead = true
    /// How much of "\r\n\r\n" the head's bytes so far end with.
    private var matched = 0

    /// A request ended (the parser's `.end`): the next bytes start a head.
    mutating func requestEnded() {
        inHead = true
        matched = 0
    }

    /// `buffer` as the parser should see it: the part that belongs to a head escaped, the rest as it is.
    mutating func segments(of buffer: ByteBuffer) -> [ByteBuffer] {
        guard inHead else { return [buffer] }
        let bytes = buffer.readableBytesView
        // Where this read's head part ends (the whole read while the head goes on).
        var headEnd = bytes.count
        for (offset, byte) in bytes.enumerated() {
            matched = byte == Self.terminator[matched] ? matched + 1 : (byte == 13 ? 1 : 0)
            if matched == 4 {
                inHead = false
                headEnd = offset + 1
                break
            }
        }
        let headPart = bytes.prefix(headEnd)
        guard headPart.contains(where: { $0 > 0x7F }) else { return [buffer] }
        var head = ByteBuffer()
        for byte in headPart {
            if byte > 0x7F { head.writeString("%" + String(byte, radix: 16, uppercase: true)) } else { head.writeInteger(byte) }
        }
        guard headEnd < bytes.count else { return [head] }
        return [head, buffer.getSlice(at: buffer.readerIndex + headEnd, length: bytes.count - headEnd)!]
    }

    private static let terminator: [UInt8] = [13, 10, 13, 10]
}
