import NIOCore
import NIOPosix
import NetsimCore

/// How a relay reaches upstream for one connection: a fixed address, a destination resolved per
/// connection (the forward proxy), a replay server, later a TLS client. The relay asks once per
/// connection, on the connection's event loop, when its machine decides to connect.
public protocol UpstreamConnector: Sendable {
    /// Connects a channel on `eventLoop` whose pipeline `initializer` sets up, or fails (refused,
    /// unreachable, timed out after `timeout`).
    func connect(for connection: ConnectionID, on eventLoop: any EventLoop, timeout: Duration,
                 initializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>) -> EventLoopFuture<any Channel>
    /// What the event log names as the upstream.
    var name: String { get }
    /// Whether ``connect(for:on:timeout:initializer:)`` opens a descriptor (all but a channel
    /// handed over open): such a connect waits while the process's descriptor reserve is given back.
    var opensDescriptor: Bool { get }
}

extension UpstreamConnector {
    public var opensDescriptor: Bool { true }
}

/// Connects to one address, with the socket options a relay leg needs.
public struct AddressConnector: UpstreamConnector {
    public let address: SocketAddress
    public let name: String

    public init(address: SocketAddress, name: String) {
        self.address = address
        self.name = name
    }

    /// Resolves `endpoint` now (a blocking lookup: fine for loopback and numeric addresses).
    public init(resolving endpoint: Endpoint) throws {
        self.init(address: try SocketAddress.makeAddressResolvingHost(endpoint.host, port: endpoint.port), name: endpoint.description)
    }

    public func connect(for connection: ConnectionID, on eventLoop: any EventLoop, timeout: Duration,
                        initializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>) -> EventLoopFuture<any Channel> {
        Relay.legOptions(ClientBootstrap(group: eventLoop))
            .connectTimeout(.nanoseconds(timeout.nanoseconds))
            .channelInitializer(initializer)
            .connect(to: address)
    }
}

extension Relay {
    /// The options every relay leg gets: half-closure kept (a FIN is forwarded, not a close),
    /// no Nagle delay, large adaptive reads, a few reads per readiness event.
    public static func legOptions(_ bootstrap: ClientBootstrap) -> ClientBootstrap {
        bootstrap
            .channelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .channelOption(ChannelOptions.tcpOption(.tcp_nodelay), value: 1)
            .channelOption(ChannelOptions.recvAllocator, value: Relay.receiveAllocator)
            .channelOption(ChannelOptions.maxMessagesPerRead, value: Relay.readsPerCycle)
    }
}

/// Resolves and connects a host name for each connection, only when the connection asks (the
/// forward proxy: a relay whose stand-in answers never resolves or connects anything).
public struct HostConnector: UpstreamConnector {
    public let destination: Endpoint
    public var name: String { destination.description }

    public init(_ destination: Endpoint) { self.destination = destination }

    public func connect(for connection: ConnectionID, on eventLoop: any EventLoop, timeout: Duration,
                        initializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>) -> EventLoopFuture<any Channel> {
        Relay.legOptions(ClientBootstrap(group: eventLoop))
            .connectTimeout(.nanoseconds(timeout.nanoseconds))
            .channelInitializer(initializer)
            .connect(host: destination.host, port: destination.port)
    }
}

/// Hands over a channel the caller has already connected, with `autoRead` off so nothing is read
/// before the relay's pipeline is in place: the forward proxy connects first, to answer `502`
/// itself when the destination cannot be reached. Whoever owns the pipeline turns reading on: a
/// relay leg's ``LegHandler`` once the leg may read, an intercepted h2 connection's layer at once.
public struct ConnectedUpstream: UpstreamConnector {
    public let channel: any Channel
    public let name: String
    public var opensDescriptor: Bool { false }

    public init(_ channel: any Channel, name: String) {
        self.channel = channel
        self.name = name
    }

    public func connect(for connection: ConnectionID, on eventLoop: any EventLoop, timeout: Duration,
                        initializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>) -> EventLoopFuture<any Channel> {
        let channel = self.channel
        return initializer(channel).map { channel }
    }
}
