import NIOCore
import NIOHPACK
import NIOHTTP2
import NetsimCore
import NetsimFaults
import NetsimRoutes

/// One client stream of an intercepted h2 connection: logs its request, lets a request fault
/// answer it, or carries it on an upstream stream of the relay's own connection.
///
/// Flow control is end to end: a side that cannot take more stops the other side's reads, so the
/// relay never buffers a stream without bound (HTTP/2's windows then hold the sender back).
final class HTTP2ClientStream: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private enum State {
        case waitingForHeaders
        /// Carried upstream (frames wait in `pending` until the upstream stream is open).
        case forwarding
        /// A request fault answers (or swallows) it; the client's further frames are dropped.
        case answered
    }

    private let layer: HTTP2Layer
    private let streamID: Int
    private var state = State.waitingForHeaders
    private var upstream: (any Channel)?
    private var pending: [HTTP2Frame.FramePayload] = []
    /// `rst-stream=internal|cancel`: the server processes the request, then the client's stream
    /// is reset instead of answered.
    private var resetAfterProcessing: RstStream.Code?
    /// The request being forwarded, logged once its upstream stream is open: a request that
    /// never reached the server (its TLS failed) is not logged as forwarded (QA 49). `reused`
    /// is counted as it is read, in the client's order: counted at the open, a stream refused
    /// meanwhile took the connection's first request (QA 57: the first stream was `reused`).
    private var forwarded: (request: HTTPRequestSummary, reused: Bool)?

    init(layer: HTTP2Layer, streamID: Int) {
        self.layer = layer
        self.streamID = streamID
    }

    func handlerAdded(context: ChannelHandlerContext) {
        layer.streamOpened(streamID)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let payload = unwrapInboundIn(data)
        switch state {
        case .answered:
            return
        case .forwarding:
            forward(payload, context: context)
        case .waitingForHeaders:
            guard case .headers(let headers) = payload else {
                context.close(promise: nil)  // a stream must start with HEADERS: reset it
                return
            }
            let request = HTTPRequestSummary(h2: headers.headers)
            if let limit = layer.exceedsStreamLimit(streamID) {
                // Over the limit `max-streams` advertised, as a server enforcing it refuses (RFC
                // 9113 5.1.2), also a stream opened before the client had that SETTINGS (QA 41).
                return refuse(request, by: MaxStreams.faultName,
                              detail: "stream \(streamID) reset with REFUSED_STREAM: \(limit) stream(s) already open, SETTINGS_MAX_CONCURRENT_STREAMS", context: context)
            }
            let reset = layer.takeReset()
            if reset == .refused {
                // Refused before the server saw it: nothing was processed.
                return refuse(request, by: RstStream.faultName, detail: "stream \(streamID) reset with REFUSED_STREAM before the server saw it", context: context)
            }
            if let (fault, reply) = layer.standInReply(to: request) {
                state = .answered
                layer.log(.httpRequest(method: request.method, path: request.uri, reused: layer.countRequest(), answeredBy: fault.rawValue,
                                       tag: request.tag, version: .http2, stream: streamID))
                answer(request, with: reply, by: fault, context: context)
                return
            }
            state = .forwarding
            resetAfterProcessing = reset
            forwarded = (request, layer.countRequest())
            pending.append(payload)
            openUpstream(context: context)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        upstream?.flush()
    }

    /// Resets the stream with REFUSED_STREAM before the server sees its request (nothing was
    /// processed: the client may send it again).
    private func refuse(_ request: HTTPRequestSummary, by fault: FaultName, detail: String, context: ChannelHandlerContext) {
        state = .answered
        layer.log(.httpRequest(method: request.method, path: request.uri, reused: layer.countRequest(), answeredBy: fault.rawValue,
                               tag: request.tag, version: .http2, stream: streamID))
        layer.log(.faultFired(fault: fault, detail: detail))
        context.writeAndFlush(wrapOutboundOut(.rstStream(.refusedStream)), promise: nil)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, let upstream { StreamReading.resume(upstream) }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        // The client reset or finished the stream: the upstream stream has no reader any more.
        upstream?.close(promise: nil)
        layer.streamClosed(streamID)
        context.fireChannelInactive()
    }

    private func openUpstream(context: ChannelHandlerContext) {
        let client = context.channel
        let (layer, streamID) = (self.layer, self.streamID)
        let resetAfterProcessing = resetAfterProcessing
        layer.openUpstreamStream(for: streamID, { stream in
            stream.eventLoop.makeCompletedFuture {
                try stream.pipeline.syncOperations.addHandler(
                    HTTP2UpstreamStream(layer: layer, client: client, streamID: streamID, resetAfterProcessing: resetAfterProcessing))
            }
        }) { [self] result in
            switch result {
            case .success(let stream):
                upstream = stream
                if let (request, reused) = forwarded {
                    layer.log(.httpRequest(method: request.method, path: request.uri, reused: reused, tag: request.tag, version: .http2, stream: streamID))
                }
                for payload in pending { stream.write(payload, promise: nil) }
                pending.removeAll()
                stream.flush()
                layer.carried(clientStream: streamID, on: stream)
            case .failure:
                // Upstream cannot be reached (logged by the layer): the connection ends, as it
                // does through an HTTP/1.1 layer, and upstream is why.
                layer.closeForWantOfUpstream()
            }
        }
    }

    private func forward(_ payload: HTTP2Frame.FramePayload, context: ChannelHandlerContext) {
        guard payload.isCarriedEndToEnd else { return }
        guard let upstream else {
            pending.append(payload)
            return
        }
        upstream.write(payload, promise: nil)
        if !upstream.isWritable { StreamReading.pause(context.channel) }
    }

    /// A request fault's answer on this stream; the connection and its other streams live on.
    private func answer(_ request: HTTPRequestSummary, with reply: StandInReply, by fault: FaultName, context: ChannelHandlerContext) {
        switch reply {
        case .silent(let detail):
            layer.log(.faultFired(fault: fault, detail: detail))
        case .respond(let response, let detail, let truncated):
            layer.log(.faultFired(fault: fault, detail: detail))
            let bodyless = request.method == "HEAD"
            var headers = HPACKHeaders([(":status", String(response.status))])
            for (name, value) in response.headers where !HTTP2ClientStream.connectionSpecific.contains(name.lowercased()) {
                headers.add(name: name.lowercased(), value: value)
            }
            headers.add(name: "content-length", value: String(response.declaredLength ?? response.body.utf8.count))
            context.write(wrapOutboundOut(.headers(.init(headers: headers, endStream: bodyless))), promise: nil)
            if !bodyless {
                let body = context.channel.allocator.buffer(string: response.body)
                context.write(wrapOutboundOut(.data(.init(data: .byteBuffer(body), endStream: !truncated))), promise: nil)
            }
            context.flush()
            if truncated && !bodyless { context.close(promise: nil) }  // short of its content-length: reset
            layer.log(.httpResponse(status: response.status, bytes: bodyless ? 0 : response.body.utf8.count, answeredBy: fault.rawValue, stream: streamID))
        }
    }

    /// Fields HTTP/2 forbids (RFC 9113 §8.2.2).
    static let connectionSpecific: Set<String> = ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "content-length"]
}

/// The upstream side of one carried stream: the response goes back to the client stream, and is
/// logged when it is complete — at END_STREAM, or at the last byte its `content-length` promised,
/// whichever is read first (as HTTP/1.1 observation logs it at its last body byte). Logged before
/// that byte is written to the client: a client that leaves once it has every byte (curl does,
/// by content-length) can close the connection before the server's END_STREAM reaches the relay.
final class HTTP2UpstreamStream: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload

    private let layer: HTTP2Layer
    private let client: any Channel
    private let streamID: Int
    private var status: Int?
    private var bytes = 0
    /// The final response's `content-length`, when it has one.
    private var expectedBytes: Int?
    /// END_STREAM was read (or the stream was reset by a fault): the response ended.
    private var ended = false
    private var logged = false
    private let resetAfterProcessing: RstStream.Code?

    init(layer: HTTP2Layer, client: any Channel, streamID: Int, resetAfterProcessing: RstStream.Code?) {
        self.layer = layer
        self.client = client
        self.streamID = streamID
        self.resetAfterProcessing = resetAfterProcessing
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let payload = unwrapInboundIn(data)
        if let code = resetAfterProcessing {
            // The server has processed the request (it is answering): the client hears a reset.
            guard !ended else { return }
            ended = true
            let error: HTTP2ErrorCode = code == .cancel ? .cancel : .internalError
            layer.log(.faultFired(fault: RstStream.faultName, detail: "stream \(streamID) reset with \(error.rfcName) after the server processed the request"))
            client.writeAndFlush(HTTP2Frame.FramePayload.rstStream(error), promise: nil)
            context.close(promise: nil)
            return
        }
        switch payload {
        case .headers(let headers):
            if status == nil, let code = headers.headers.first(name: ":status").flatMap(Int.init), code >= 200 {
                status = code
                expectedBytes = headers.headers.first(name: "content-length").flatMap(Int.init)
            }
            if headers.endStream { responseEnded() }
        case .data(let data):
            if case .byteBuffer(let buffer) = data.data { bytes += buffer.readableBytes }
            if data.endStream {
                responseEnded()
            } else if let expectedBytes, bytes >= expectedBytes {
                logResponse()
            }
        default:
            guard payload.isCarriedEndToEnd else { return }
        }
        client.write(payload, promise: nil)
        if !client.isWritable { StreamReading.pause(context.channel) }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        client.flush()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { StreamReading.resume(client) }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        // Upstream reset the stream or went away before the response ended: so does the client's.
        if !ended { client.close(promise: nil) }
        context.fireChannelInactive()
    }

    private func responseEnded() {
        ended = true
        logResponse()
    }

    private func logResponse() {
        guard !logged else { return }
        logged = true
        layer.log(.httpResponse(status: status ?? 0, bytes: bytes, stream: streamID))
    }
}

extension HTTPRequestSummary {
    /// A request as an h2 HEADERS frame carries it.
    /// `:authority` is the request's `Host` (RFC 9113 §8.3.1), for what judges a request by its
    /// host: a portal answered h2 requests "to no Host", with a `continue=` URL to `unknown` (QA 48).
    init(h2 headers: HPACKHeaders) {
        var fields = headers.filter { !$0.name.hasPrefix(":") }.map { HTTPHeader($0.name, $0.value) }
        if let authority = headers.first(name: ":authority"), !fields.contains(where: { $0.name.lowercased() == "host" }) {
            fields.append(HTTPHeader("Host", authority))
        }
        self.init(method: headers.first(name: ":method") ?? "GET", uri: headers.first(name: ":path") ?? "/",
                  headers: fields, isKeepAlive: true, version: .http2, scheme: headers.first(name: ":scheme") ?? "https")
    }
}

/// Back-pressure between the two streams that carry one request: the reading side pauses while
/// the other side cannot take more, and resumes when it can.
enum StreamReading {
    static func pause(_ stream: any Channel) {
        stream.setOption(ChannelOptions.autoRead, value: false).whenFailure { _ in }
    }

    /// Turns reading back on and asks for a read: an `HTTP2StreamChannel` does not read by
    /// itself when `autoRead` turns on, so frames it buffered meanwhile would wait for ever.
    static func resume(_ stream: any Channel) {
        stream.setOption(ChannelOptions.autoRead, value: true).whenSuccess { stream.read() }
    }
}

extension HTTP2Frame.FramePayload {
    /// Whether a stream's frame is the request's or the response's own (HEADERS, DATA, a reset),
    /// carried to the other side's stream. A WINDOW_UPDATE is each connection's flow control,
    /// which NIO keeps per side: forwarded, upstream's acknowledgement of an upload reached the
    /// client after the client's END_STREAM, where a WINDOW_UPDATE is a protocol error, and
    /// closed the client's connection before the response (QA 53: uploads of 1 MB at 800 KB/s
    /// failed with curl's "stream 1 was not closed cleanly").
    var isCarriedEndToEnd: Bool {
        switch self {
        case .headers, .data, .rstStream: true
        default: false
        }
    }
}
