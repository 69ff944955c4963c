import NIOCore
import NIOHTTP1
import NetsimCore

/// Records each request of one connection in the server's ``RequestLog`` as it is decoded.
///
/// It sits between the request decoder and `HTTPServerPipelineHandler`, which holds pipelined
/// requests back until the previous response is done: here a request is recorded when its head
/// arrives, not when its turn comes, and it stays recorded whatever happens to the connection
/// afterwards. It passes everything on unchanged.
final class RequestRecorder: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart

    private let log: RequestLog
    private let routes: RouteTable
    private let connection: ServedConnection
    /// The HTTP/2 stream this recorder sits on; nil on an HTTP/1.x connection.
    private let stream: Int?
    /// The log index of the request whose body is arriving.
    private var current: Int?

    init(log: RequestLog, routes: RouteTable, connection: ServedConnection, stream: Int? = nil) {
        self.log = log
        self.routes = routes
        self.connection = connection
        self.stream = stream
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            let route = routes.route(method: head.method.rawValue, target: head.uri)
            current = log.append(ServerRequest(
                method: head.method.rawValue, path: RouteTable.path(of: head.uri), bodyBytes: 0,
                connection: connection.number, reusedConnection: connection.countRequest(), time: log.now(), status: route.status,
                version: stream == nil ? HTTPWireVersion(major: head.version.major, minor: head.version.minor) : .http2,
                stream: stream, tag: head.headers.first(name: ServerRequest.tagHeader)))
        case .body(let buffer):
            if let current { log.addBodyBytes(buffer.readableBytes, to: current) }
        case .end:
            current = nil
        }
        context.fireChannelRead(data)
    }
}
