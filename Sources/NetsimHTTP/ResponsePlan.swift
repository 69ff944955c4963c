#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore
import NIOHTTP1

/// What the server will send for one request: the head and how the body goes out.
///
/// Pure (apart from reading the wall clock for `Date`), so the framing rules live in one place:
/// - `Content-Length`, or `Transfer-Encoding: chunked` when the route asks for it and the client
///   speaks HTTP/1.1 (an HTTP/1.0 client gets `Content-Length`: it can't read chunks);
/// - `Date`; `Connection: close` when the connection ends after this response, `keep-alive`
///   for an HTTP/1.0 client that asked to keep it;
/// - then the route's headers in order. A route's `Date` or `Connection` replaces the server's
///   (a route saying `Connection: close` makes the server close after answering); a route's
///   `Content-Length` or `Transfer-Encoding` is ignored, since the framing must match the body.
/// - HEAD requests and 1xx/204/304 responses carry no body (the head still advertises its length).
struct ResponsePlan {
    var head: HTTPResponseHead
    /// The body to stream; nil when the response has none.
    var body: BodyPieces?
    /// Close the connection once the response is written.
    var closeAfter: Bool

    init(route: HTTPRoute, request: HTTPRequestHead, allocator: ByteBufferAllocator) {
        let status = HTTPResponseStatus(statusCode: route.status)
        let http11 = request.version.major > 1 || (request.version.major == 1 && request.version.minor >= 1)
        let chunked = route.chunked && http11
        let routeConnection = route.headers.last { $0.name.lowercased() == "connection" }?.value
        closeAfter = !request.isKeepAlive || routeConnection?.lowercased().contains("close") == true

        var headers = HTTPHeaders()
        if chunked {
            headers.add(name: "Transfer-Encoding", value: "chunked")
        } else {
            headers.add(name: "Content-Length", value: String(route.body.byteCount))
        }
        headers.add(name: "Date", value: httpDate())
        if closeAfter {
            headers.add(name: "Connection", value: "close")
        } else if !http11 {
            headers.add(name: "Connection", value: "keep-alive")
        }
        for header in route.headers {
            switch header.name.lowercased() {
            case "content-length", "transfer-encoding": continue
            case "date", "connection": headers.remove(name: header.name)
            default: break
            }
        }
        for header in route.headers {
            switch header.name.lowercased() {
            case "content-length", "transfer-encoding": continue
            case "connection" where closeAfter: headers.add(name: header.name, value: "close")
            default: headers.add(name: header.name, value: header.value)
            }
        }
        head = HTTPResponseHead(version: .http1_1, status: status, headers: headers)

        let hasBody = request.method != .HEAD && status.mayHaveResponseBody && route.body.byteCount > 0
        body = hasBody ? BodyPieces(route.body, chunked: chunked, allocator: allocator) : nil
    }
}

/// A response body cut into the pieces written one at a time (as the channel stays writable).
///
/// A generated body is one shared block written again and again (slices share its storage), so a
/// body of any size costs one block of memory. A chunked body goes out in about three chunks
/// (and 64 KiB chunks for big bodies), each flushed on its own.
struct BodyPieces {
    let chunked: Bool
    private let source: ByteBuffer
    private let total: Int
    private let pieceSize: Int
    private var offset = 0

    init(_ body: HTTPBody, chunked: Bool, allocator: ByteBufferAllocator) {
        self.chunked = chunked
        switch body {
        case .text(let text):
            source = allocator.buffer(string: text)
        case .generated(let size):
            source = allocator.buffer(bytes: GeneratedBody.block(forSize: size).prefix(size))
        }
        total = body.byteCount
        let fullPiece = GeneratedBody.blockSize
        pieceSize = chunked ? min(fullPiece, max(1, (total + 2) / 3)) : fullPiece
    }

    var isFinished: Bool { offset >= total }

    /// The next piece, or nil when everything has been handed out.
    mutating func next() -> ByteBuffer? {
        guard offset < total else { return nil }
        let start = offset % source.readableBytes
        let length = min(pieceSize, total - offset, source.readableBytes - start)
        offset += length
        return source.getSlice(at: source.readerIndex + start, length: length)
    }
}

/// The current time as an HTTP-date: `Sun, 06 Nov 1994 08:49:37 GMT`.
func httpDate() -> String {
    var now = time(nil)
    var parts = tm()
    gmtime_r(&now, &parts)
    let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
    return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
        + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
}
