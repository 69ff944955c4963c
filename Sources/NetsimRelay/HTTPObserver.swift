import NIOCore
import NIOEmbedded
import NIOHTTP1
import NetsimCore

/// NIOHTTP1's decoder run over a copy of one direction of a connection's bytes, in an
/// `EmbeddedChannel` of its own: it never touches the bytes the relay forwards. Public for
/// anything else that must read HTTP/1.1 from raw bytes (the bench's Toxiproxy API calls).
///
/// Confined to one thread: the connection's event loop in the relay (the embedded loop is
/// created there).
public final class HTTPStreamDecoder<Part> {
    private let channel: EmbeddedChannel

    /// A request decoder (`Part` is `HTTPServerRequestPart`).
    public static func requests() -> HTTPStreamDecoder<HTTPServerRequestPart> {
        HTTPStreamDecoder<HTTPServerRequestPart>(ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes)))
    }

    /// A response decoder (`Part` is `HTTPClientResponsePart`); tell it each request head with
    /// ``requestSent(_:)`` so it knows a response to HEAD has no body.
    public static func responses() -> HTTPStreamDecoder<HTTPClientResponsePart> {
        HTTPStreamDecoder<HTTPClientResponsePart>(ByteToMessageHandler(HTTPResponseDecoder(leftOverBytesStrategy: .dropBytes)))
    }

    private init(_ handler: any ChannelHandler) {
        channel = EmbeddedChannel()
        try? channel.pipeline.syncOperations.addHandler(handler)
    }

    /// Feeds bytes; returns the parts decoded, or throws the parse error (parts decoded before
    /// the error are passed to `parts` first).
    public func feed(_ buffer: ByteBuffer, _ parts: (Part) -> Void) throws {
        var failure: (any Error)?
        do { try channel.writeInbound(buffer) } catch { failure = error }
        try drain(parts)
        if let failure { throw failure }
    }

    /// The stream ended (FIN): a body delimited by the close ends here.
    public func finish(_ parts: (Part) -> Void) throws {
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        var failure: (any Error)?
        do { try channel.throwIfErrorCaught() } catch { failure = error }
        try drain(parts)
        if let failure { throw failure }
    }

    private func drain(_ parts: (Part) -> Void) throws {
        while let part = try channel.readInbound(as: Part.self) { parts(part) }
    }

    /// Tells a response decoder which request its next response answers.
    public func requestSent(_ head: HTTPRequestHead) {
        _ = try? channel.writeOutbound(HTTPClientRequestPart.head(head))
        while (try? channel.readOutbound(as: HTTPClientRequestPart.self)) ?? nil != nil {}
    }
}

/// HTTP/1.1 observation of one connection (``RelayConfiguration/observeHTTP``): the bytes that
/// cross the relay each way are parsed, requests and responses are logged, and at the first
/// bytes that are not HTTP observation stops for the connection (one `httpUnobserved` event).
final class HTTPObserver {
    private var requests: HTTPStreamDecoder<HTTPServerRequestPart>? = .requests()
    private var responses: HTTPStreamDecoder<HTTPClientResponsePart>? = .responses()
    /// Requests this observer saw go upstream (the machine numbers them with those a stand-in answered).
    private(set) var requestCount = 0
    private var responseStatus = 0
    private var responseBytes = 0
    private let request: (HTTPRequestHead) -> Void
    private let response: (_ status: Int, _ bodyBytes: Int) -> Void
    private let log: (EventKind) -> Void

    /// `request` hears of each request head going upstream and `response` of each response
    /// ending towards the client (the machine logs them once their bytes are written on);
    /// `log` records everything else.
    init(request: @escaping (HTTPRequestHead) -> Void, response: @escaping (_ status: Int, _ bodyBytes: Int) -> Void,
         log: @escaping (EventKind) -> Void) {
        self.request = request
        self.response = response
        self.log = log
    }

    var isObserving: Bool { requests != nil }

    /// Bytes forwarded in `direction` (up: towards the server).
    func observe(_ buffer: ByteBuffer, _ direction: Direction) {
        guard isObserving else { return }
        if direction == .up, requestCount == 0, let first = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self), first == 0x16 {
            return stop("TLS (a ClientHello), not plain HTTP")
        }
        do {
            if direction == .up {
                try requests?.feed(buffer, handleRequest)
            } else {
                try responses?.feed(buffer, handleResponse)
            }
        } catch {
            stop(reason(error, direction))
        }
    }

    /// The stream in `direction` ended with a FIN.
    func ended(_ direction: Direction) {
        guard isObserving, direction == .down else { return }
        do { try responses?.finish(handleResponse) } catch { stop(reason(error, direction)) }
    }

    private func handleRequest(_ part: HTTPServerRequestPart) {
        guard case .head(let head) = part else { return }
        request(head)
        requestCount += 1
        responses?.requestSent(head)
    }

    private func handleResponse(_ part: HTTPClientResponsePart) {
        switch part {
        case .head(let head):
            responseStatus = Int(head.status.code)
            responseBytes = 0
        case .body(let body):
            responseBytes += body.readableBytes
        case .end:
            response(responseStatus, responseBytes)
        }
    }

    private func reason(_ error: any Error, _ direction: Direction) -> String {
        let from = direction == .up ? "the client" : "the server"
        if direction == .up, requestCount == 0 { return "not HTTP: \(from)'s first bytes do not parse as a request (\(error))" }
        if direction == .down, requestCount == 0 { return "not HTTP: \(from) spoke before any request (\(error))" }
        return "\(from)'s bytes stopped parsing as HTTP/1.1 (\(error))"
    }

    private func stop(_ reason: String) {
        requests = nil
        responses = nil
        log(.httpUnobserved(reason: reason))
    }
}
