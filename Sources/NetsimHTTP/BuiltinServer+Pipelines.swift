import NIOCore
import NIOHTTP1
import NIOHTTP2

/// The built-in upstream's pipelines, one per protocol; TLS (when asked) sits in front of both.
extension BuiltinServer {
    /// HTTP/1.1: `HTTPResponseEncoder`, request decoder, ``RequestRecorder``,
    /// `HTTPServerPipelineHandler`, header validator, `HTTPServerProtocolErrorHandler`,
    /// ``KeepAliveTimeout`` (with a timeout), ``RouteResponder``.
    func configureHTTP1(_ channel: any Channel, connection: ServedConnection) throws {
        let pipeline = channel.pipeline.syncOperations
        try pipeline.configureHTTPServerPipeline(withPipeliningAssistance: true, withErrorHandling: true)
        let pipelining = try pipeline.handler(type: HTTPServerPipelineHandler.self)
        try pipeline.addHandler(RequestRecorder(log: log, routes: table, connection: connection), position: .before(pipelining))
        if let idleTimeout { try pipeline.addHandler(KeepAliveTimeout(timeout: idleTimeout, connection: connection)) }
        try pipeline.addHandler(RouteResponder(routes: table))
    }

    /// HTTP/2: `NIOHTTP2Handler` with its stream multiplexer and ``HTTP2IdleTimeout`` on the
    /// connection; on each stream, the HTTP/1 view of its frames
    /// (`HTTP2FramePayloadToHTTP1ServerCodec`), ``RequestRecorder`` and ``RouteResponder`` — the
    /// same route answering as HTTP/1.1, one request per stream.
    func configureHTTP2(_ channel: any Channel, connection: ServedConnection) throws {
        let pipeline = channel.pipeline.syncOperations
        let log = log
        let table = table
        let idle = idleTimeout.map { HTTP2IdleTimeout(timeout: $0, connection: connection) }
        _ = try pipeline.configureHTTP2Pipeline(
            mode: .server, connectionConfiguration: .init(), streamConfiguration: .init(), streamDelegate: idle
        ) { stream in
            stream.eventLoop.makeCompletedFuture {
                let streamID = try stream.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID)
                let handlers = stream.pipeline.syncOperations
                try handlers.addHandler(HTTP2FramePayloadToHTTP1ServerCodec())
                try handlers.addHandler(RequestRecorder(log: log, routes: table, connection: connection, stream: streamID.map { Int($0) }))
                try handlers.addHandler(RouteResponder(routes: table))
            }
        }
        if let idle { try pipeline.addHandler(idle) }
    }
}
