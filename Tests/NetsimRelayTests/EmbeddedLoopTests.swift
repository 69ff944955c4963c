import NIOCore
import NIOEmbedded
import NetsimCore
import NetsimLink
import NetsimRelay
import Testing

/// The relay's executor on an `EmbeddedEventLoop`: both legs are `EmbeddedChannel`s, the client
/// adopted, the upstream handed over by a connector, and time moves only when the test says.
@Suite("The relay on an embedded event loop")
struct EmbeddedLoopTests {
    /// Connects a relay connection to an `EmbeddedChannel` the test holds.
    struct EmbeddedConnector: UpstreamConnector {
        let channel: EmbeddedChannel
        var name: String { "embedded" }

        func connect(for connection: ConnectionID, on eventLoop: any EventLoop, timeout: Duration,
                     initializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>) -> EventLoopFuture<any Channel> {
            let channel = self.channel
            return initializer(channel).flatMap {
                channel.connect(to: try! SocketAddress(ipAddress: "127.0.0.1", port: 9))
            }.map { channel }
        }
    }

    /// A relay with `link` and `faults` on an embedded loop, one adopted client, its upstream.
    static func connection(link: LinkConfiguration, faults: [FaultRule] = []) async throws -> (EmbeddedEventLoop, EmbeddedChannel, EmbeddedChannel, Relay) {
        let loop = EmbeddedEventLoop()
        let upstream = EmbeddedChannel(loop: loop)
        let relay = Relay(configuration: RelayConfiguration(upstream: Endpoint(host: "127.0.0.1", port: 9), link: link, faults: faults),
                          group: loop, connector: EmbeddedConnector(channel: upstream))
        try await relay.startWithoutListener()
        let client = EmbeddedChannel(loop: loop)
        try await client.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 40000)).get()
        try relay.adoptNow(client)
        return (loop, client, upstream, relay)
    }

    static func text(_ channel: EmbeddedChannel) throws -> String {
        var all = ""
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { all += String(buffer: buffer) }
        return all
    }

    @Test("latency is released on the loop's clock: nothing at 99 ms, everything at 100 ms")
    func latencyOnTheLoopClock() async throws {
        let (loop, client, upstream, _) = try await Self.connection(link: LinkConfiguration(both: DirectionLink(latency: .milliseconds(100))))
        loop.advanceTime(by: .milliseconds(300))  // past the simulated handshake, both sides
        try client.writeInbound(ByteBuffer(string: "request"))
        try upstream.writeInbound(ByteBuffer(string: "answer"))
        loop.advanceTime(by: .milliseconds(99))
        #expect(try Self.text(upstream) == "")
        #expect(try Self.text(client) == "")
        loop.advanceTime(by: .milliseconds(1))
        #expect(try Self.text(upstream) == "request")
        #expect(try Self.text(client) == "answer")
    }

    /// A new connection costs its handshake: the client may send one round trip after its SYN
    /// (the SYN-ACK's return), the server half a round trip later (the ACK's arrival). The
    /// relay's sockets connect at once, and a new connection cost no more than a reused one.
    @Test("a new connection's first bytes wait for the simulated handshake")
    func handshakeOnTheLoopClock() async throws {
        var link = LinkConfiguration.unimpaired
        link.up.latency = .milliseconds(100)
        link.down.latency = .milliseconds(150)
        let (loop, client, upstream, _) = try await Self.connection(link: link)
        try client.writeInbound(ByteBuffer(string: "request"))  // at once, as the relay accepted it
        try upstream.writeInbound(ByteBuffer(string: "banner"))  // a server that speaks first
        loop.advanceTime(by: .milliseconds(349))
        #expect(try Self.text(upstream) == "")
        loop.advanceTime(by: .milliseconds(1))
        // Handshake 250 ms, then the request's own 100 ms.
        #expect(try Self.text(upstream) == "request")
        loop.advanceTime(by: .milliseconds(149))
        #expect(try Self.text(client) == "")
        loop.advanceTime(by: .milliseconds(1))
        // The server may send from 350 ms; its bytes take 150 ms: two round trips after the SYN.
        #expect(try Self.text(client) == "banner")
    }

    @Test("slow-connect holds the upstream connect exactly its delay; the client's bytes wait for it")
    func slowConnectOnTheLoopClock() async throws {
        let (loop, client, upstream, relay) = try await Self.connection(link: .unimpaired, faults: [FaultRule(.slowConnect(.seconds(2)))])
        try client.writeInbound(ByteBuffer(string: "early"))
        loop.advanceTime(by: .milliseconds(1999))
        #expect(!upstream.isActive)
        loop.advanceTime(by: .milliseconds(1))
        #expect(upstream.isActive)
        #expect(try Self.text(upstream) == "early")
        #expect(relay.eventLog.events.contains { if case .upstreamConnected = $0.kind { true } else { false } })
    }

    /// A slow connect delays the handshake, and the handshake's round trip comes on top: the two
    /// overlapped, so slow-connect=1s on a link with a 1 s round trip changed nothing.
    @Test("slow-connect and the handshake add up")
    func slowConnectAndTheHandshakeAddUp() async throws {
        var link = LinkConfiguration.unimpaired
        link.up.latency = .milliseconds(100)
        link.down.latency = .milliseconds(150)
        let (loop, client, upstream, _) = try await Self.connection(link: link, faults: [FaultRule(.slowConnect(.seconds(1)))])
        try client.writeInbound(ByteBuffer(string: "request"))
        loop.advanceTime(by: .milliseconds(1349))
        #expect(try Self.text(upstream) == "")
        loop.advanceTime(by: .milliseconds(1))
        // 1 s late, then the handshake's 250 ms, then the request's own 100 ms.
        #expect(try Self.text(upstream) == "request")
    }
}
