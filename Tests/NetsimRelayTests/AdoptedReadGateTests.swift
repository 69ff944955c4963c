import NIOCore
import NIOPosix
import NetsimLoopback
@testable import NetsimRelay
import Testing

/// A channel handed to the relay not reading (`autoRead` off: the forward proxy's client and
/// destination legs) starts reading only when its leg handler lets reads through. The proxy used
/// to turn `autoRead` on itself at the hand-over, and NIO's read then went past the handler's
/// gate: one read cycle over the backpressure limit.
@Suite struct AdoptedReadGateTests {
    @Test func anAdoptedChannelThatWasNotReadingReadsOnlyOnceAllowed() async throws {
        let server = try LoopbackServer.echo()
        defer { server.stop() }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do {
            let channel = try await ClientBootstrap(group: group)
                .channelOption(ChannelOptions.autoRead, value: false)
                .connect(host: server.endpoint.host, port: server.endpoint.port).get()
            let handler = LegHandler(leg: .upstream)
            let (added, allowed) = try await channel.eventLoop.submit {
                try channel.pipeline.syncOperations.addHandler(handler)
                let options = channel.syncOptions!
                let added = try options.getOption(ChannelOptions.autoRead)
                handler.setReadsAllowed(true)
                return (added, try options.getOption(ChannelOptions.autoRead))
            }.get()
            #expect(added == false, "reads are not allowed yet: the channel must not read")
            #expect(allowed == true, "reads allowed: the handler turns autoRead on")
            try await channel.close()
        } catch {
            Issue.record("\(error)")
        }
        try await group.shutdownGracefully()
    }
}
