import NIOCore
import NIOHTTP1

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
    /// 1-based, in accept order.
    private let connection: Int
    private var requestCount = 0
    /// The log index of the request whose body is arriving.
    private var current: Int?

    init(log: RequestLog, routes: RouteTable, connection: Int) {
        self.log = log
        self.routes = routes
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            let route = routes.route(method: head.method.rawValue, target: head.uri)
            current = log.append(ServerRequest(
                method: head.method.rawValue, path: RouteTable.path(of: head.uri), bodyBytes: 0,
                connection: connection, reusedConnection: requestCount > 0, time: log.now(), status: route.status))
            requestCount += 1
        case .body(let buffer):
            if let current { log.addBodyBytes(buffer.readableBytes, to: current) }
        case .end:
            current = nil
        }
        context.fireChannelRead(data)
    }
}
