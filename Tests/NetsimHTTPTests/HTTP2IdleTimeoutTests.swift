import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NetsimCore
import NetsimHTTP
import NetsimLoopback
import NetsimTLS
import Testing

/// An idle h2 connection ends as real servers end it: GOAWAY (NO_ERROR, last stream id), then a
/// close — seen in the raw frames a client receives.
@Suite struct HTTP2IdleTimeoutTests {
    @Test func anIdleConnectionGetsGoAwayWithTheLastStreamThenACloseAfterTheTimeout() async throws {
        let files = TLSTestFiles()
        // The timer runs from the moment the connection speaks h2, as a real server's does; on a
        // loaded machine the request may come after it: then the GOAWAY's last stream is 0, and
        // the test checks that instead (the frames must agree with what the server served).
        let server = BuiltinServer(routes: [HTTPRoute(path: "/x", body: .text("x"))], idleTimeout: .milliseconds(1500),
                                   transport: try .tls(authority: files.authority, protocols: [.http2]))
        let endpoint = try await server.start()
        defer { Task { await server.stop() } }
        // A loop of its own: the shared one is busy with every other test of the run.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)

        let collector = RawCollector()
        // Taken before the connect: the server's timer cannot start before the connection exists,
        // while a stamp taken after `connect` resumes can come late on a busy pool (a CI run saw
        // the close 1.44 s after such a stamp).
        let start = ContinuousClock.now
        let sslContext = try NIOSSLContext(configuration: try files.authority.clientConfiguration(protocols: [.http2]))
        let channel = try await ClientBootstrap(group: group).channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: sslContext, serverHostname: "localhost"))
                try channel.pipeline.syncOperations.addHandler(collector)
            }
        }.connect(host: endpoint.host, port: endpoint.port).get()
        // The client preface, an empty SETTINGS, then one request (HEADERS with END_STREAM, HPACK
        // literal-free indexed fields: :method GET, :scheme https, :path /, then :authority).
        var preface = channel.allocator.buffer(string: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        preface.writeBytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
        let block: [UInt8] = [0x82, 0x87, 0x84, 0x41, 0x09] + Array("localhost".utf8)
        preface.writeBytes([0, 0, UInt8(block.count), 1, 0x05, 0, 0, 0, 1] + block)
        try? await channel.writeAndFlush(preface)   // fails only if the server went away first
        try await channel.closeFuture.get()
        try await group.shutdownGracefully()
        let elapsed = ContinuousClock.now - start

        let frames = HTTP2Frames.parse(collector.bytes)
        let goAway = try #require(frames.first { $0.type == 7 }, "frame types seen: \(frames.map(\.type))")
        let lastStream = goAway.payload.prefix(4).reduce(0) { $0 << 8 | Int($1) } & 0x7fff_ffff
        let errorCode = goAway.payload.dropFirst(4).prefix(4).reduce(0) { $0 << 8 | Int($1) }
        #expect(errorCode == 0)
        #expect(elapsed >= .milliseconds(1500))
        // The last stream is the one the server answered (stream 1), or 0 if the timer beat the
        // request on a starved machine; either way the answer's HEADERS came before the GOAWAY.
        let served = server.requests.map(\.stream)
        #expect(served == [1] || served.isEmpty)
        #expect(lastStream == (served.isEmpty ? 0 : 1))
        if !served.isEmpty { #expect(frames.contains { $0.type == 1 && $0.stream == 1 }) }
    }
}

/// Collects every decrypted byte the server sends.
private final class RawCollector: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    private(set) var bytes: [UInt8] = []

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        bytes += Array(unwrapInboundIn(data).readableBytesView)
    }
}

