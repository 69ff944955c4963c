import NIOCore
import NetsimCore

/// Frame boundaries in the bytes an h2 client sends (TLS already removed): the 24-byte preface,
/// then frames, each a 9-byte header (length, type, flags, stream) and its payload. Pure: fed
/// bytes in any cut, it names the stream of every HEADERS frame as its header completes.
struct HTTP2FrameScanner {
    private static let prefaceLength = 24
    private static let headerLength = 9
    private static let headersType: UInt8 = 0x1

    private var prefaceLeft = HTTP2FrameScanner.prefaceLength
    /// The frame header read so far, when a read ended inside one.
    private var header: [UInt8] = []
    private var payloadLeft = 0

    /// Reads `bytes`, the next of the stream; `opened` is called with the stream id of each
    /// HEADERS frame (a client's HEADERS on a new stream opens it).
    mutating func scan(_ bytes: some Collection<UInt8>, opened: (Int) -> Void) {
        var index = bytes.startIndex
        while index != bytes.endIndex {
            if prefaceLeft > 0 {
                let skipped = min(prefaceLeft, bytes.distance(from: index, to: bytes.endIndex))
                prefaceLeft -= skipped
                index = bytes.index(index, offsetBy: skipped)
            } else if payloadLeft > 0 {
                let skipped = min(payloadLeft, bytes.distance(from: index, to: bytes.endIndex))
                payloadLeft -= skipped
                index = bytes.index(index, offsetBy: skipped)
            } else {
                header.append(bytes[index])
                index = bytes.index(after: index)
                guard header.count == Self.headerLength else { continue }
                payloadLeft = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
                if header[3] == Self.headersType {
                    opened(Int(header[5] & 0x7f) << 24 | Int(header[6]) << 16 | Int(header[7]) << 8 | Int(header[8]))
                }
                header.removeAll(keepingCapacity: true)
            }
        }
    }
}

/// Before `NIOHTTP2Handler` on an intercepted h2 client connection: says which streams the client
/// opened after the relay's GOAWAY. A server that sent GOAWAY ignores streams past its last one
/// (RFC 9113 §6.8), and NIO does so without a word: the client then waited for its timeout, and
/// the log did not say why (QA 57).
final class HTTP2LateStreamWatch: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private var scanner = HTTP2FrameScanner()
    /// The GOAWAY the relay sent: its last stream, and what sent it.
    private var goneAway: (last: Int, cause: FaultName)?
    private var lastReported = 0
    private let report: (_ stream: Int, _ last: Int, _ cause: FaultName) -> Void

    /// `report` is called once per stream the client opens after the GOAWAY.
    init(report: @escaping (_ stream: Int, _ last: Int, _ cause: FaultName) -> Void) {
        self.report = report
    }

    /// The relay sent GOAWAY with last stream `last` (the first one counts: a second, before
    /// closing, repeats it).
    func wentAway(last: Int, cause: FaultName) {
        if goneAway == nil { goneAway = (last, cause) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        scanner.scan(unwrapInboundIn(data).readableBytesView) { stream in
            // Odd streams are the client's; it opens them in increasing order.
            guard let (last, cause) = goneAway, stream % 2 == 1, stream > last, stream > lastReported else { return }
            lastReported = stream
            report(stream, last, cause)
        }
        context.fireChannelRead(data)
    }
}
