import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import NetsimCore
import NetsimLoopback
import NetsimRelay
import NetsimTLS
import Testing

/// An intercepted h2 response is logged when it is complete by its content-length, not only at
/// the server's END_STREAM: a client that has every byte may leave before that END_STREAM
/// reaches the relay (curl does), and the response must still be in the event log. Two CI runs
/// of InterceptionTests had 4 of 5 responses logged that way.
@Suite("h2 responses are logged at their last byte")
struct H2ResponseLogTests {
    /// Answers each stream with 200, a content-length and that many bytes, then holds the stream
    /// open: END_STREAM never comes.
    final class WithholdingEndStream: ChannelInboundHandler {
        typealias InboundIn = HTTP2Frame.FramePayload
        typealias OutboundOut = HTTP2Frame.FramePayload
        let size: Int
        private var answered = false

        init(size: Int) { self.size = size }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case .headers = unwrapInboundIn(data), !answered else { return }
            answered = true
            let headers = HPACKHeaders([(":status", "200"), ("content-length", String(size))])
            context.write(wrapOutboundOut(.headers(.init(headers: headers))), promise: nil)
            let body = context.channel.allocator.buffer(repeating: UInt8(ascii: "a"), count: size)
            context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(body)))), promise: nil)
        }
    }

    @Test func aResponseWhoseEndStreamNeverComesIsLoggedWhenItsBodyIsComplete() async throws {
        let setup = try InterceptionTests.Setup()
        let size = 300_000
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let tls = try NIOSSLContext(configuration: setup.authority.serverConfiguration(protocols: [.http2]))
        let origin = try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls))
                }.flatMap {
                    channel.configureHTTP2Pipeline(mode: .server) { stream in
                        stream.eventLoop.makeCompletedFuture { try stream.pipeline.syncOperations.addHandler(WithholdingEndStream(size: size)) }
                    }.map { _ in }
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let upstream = Endpoint(host: "127.0.0.1", port: origin.localAddress?.port ?? 0)
        let interception = try TLSInterception(authority: setup.authority, upstreamTrust: .authority(setup.authority))
        let relay = Relay(configuration: RelayConfiguration(upstream: upstream, observeHTTP: true, tls: interception))
        let endpoint = try await relay.start()
        // curl is done once it has content-length bytes, and exits without the END_STREAM.
        let result = try await setup.curl(["https://localhost:\(endpoint.port)/held"], extra: ["--http2"])
        let responses = relay.eventLog.events.compactMap { event -> (Int, Int)? in
            if case .httpResponse(let status, let bytes, _, _) = event.kind { return (status, bytes) }
            return nil
        }
        await relay.stop()
        try? await origin.close()
        try? await group.shutdownGracefully()
        #expect(result.status == 0, "curl: \(result.standardOutput) \(result.standardError)")
        #expect(responses.map(\.0) == [200] && responses.map(\.1) == [size], "\(responses)")
    }
}
