import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import NetsimTLS
import NetsimCore

/// The upstream of an intercepted connection's wire layer: one end of a loopback TCP pair whose
/// other end the relay adopts as the connection's HTTP layer (TLS terminated with netsim's CA,
/// HTTP observed and answered by request faults, then TLS again to the real upstream through
/// ``TLSUpstreamConnector``).
///
/// Both ends live on the connection's event loop; the HTTP layer shares the connection's id, so
/// its HTTP events and request faults are logged as the connection's own.
struct InterceptConnector: UpstreamConnector {
    let relay: Relay
    let clientFacing: ClientFacingContexts
    /// How the HTTP layer reaches upstream: TLS over the relay's own connector, with ALPN
    /// `http/1.1` or `h2` as the client chose.
    let upstream: TLSUpstreamConnector
    let upstreamHTTP2: TLSUpstreamConnector
    let base: any UpstreamConnector

    /// The TLS contexts of an interception, made once per relay (a context is costly to make).
    struct Contexts: Sendable {
        let clientFacing: ClientFacingContexts
        let upstream: NIOSSLContext
        let upstreamHTTP2: NIOSSLContext
        let serverName: String?
        /// False under `--upstream-insecure`.
        let verifiesUpstream: Bool

        init(_ interception: TLSInterception) throws {
            clientFacing = try ClientFacingContexts(interception)
            upstream = try NIOSSLContext(configuration: interception.upstream)
            upstreamHTTP2 = try NIOSSLContext(configuration: interception.upstreamHTTP2)
            serverName = interception.upstreamServerName
            verifiesUpstream = interception.upstream.certificateVerification != .none
        }
    }

    init(relay: Relay, contexts: Contexts, base: any UpstreamConnector) {
        self.relay = relay
        self.base = base
        clientFacing = contexts.clientFacing
        upstream = TLSUpstreamConnector(base: base, context: contexts.upstream, serverName: contexts.serverName, verifies: contexts.verifiesUpstream)
        upstreamHTTP2 = TLSUpstreamConnector(base: base, context: contexts.upstreamHTTP2, serverName: contexts.serverName, verifies: contexts.verifiesUpstream)
    }

    var name: String { "\(base.name) (TLS intercepted)" }

    func connect(for connection: ConnectionID, on eventLoop: any EventLoop, timeout: Duration,
                 initializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>) -> EventLoopFuture<any Channel> {
        let (relay, upstream, upstreamHTTP2) = (relay, upstream, upstreamHTTP2)
        let context: NIOSSLContext
        do { context = try clientFacing.context(reaching: relay.addressReached(by: connection)) } catch {
            return eventLoop.makeFailedFuture(error)
        }
        return LoopbackPair.join(on: eventLoop, wireSide: initializer) { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                // The HTTP layer is chosen by what the client negotiated.
                try channel.pipeline.syncOperations.addHandler(ApplicationProtocolNegotiationHandler { result, channel in
                    channel.eventLoop.makeCompletedFuture {
                        if case .negotiated(ApplicationProtocol.http2.rawValue) = result {
                            try HTTP2Layer(id: connection, relay: relay, client: channel).start(connector: upstreamHTTP2)
                        } else {
                            try relay.adoptHTTPLayer(channel, of: connection, connector: upstream)
                        }
                    }
                })
            }
        }
    }
}

/// Connects through `base`, then speaks TLS over it with verification on: the HTTP layer's way
/// to the real upstream when the relay intercepts.
struct TLSUpstreamConnector: UpstreamConnector {
    let base: any UpstreamConnector
    let context: NIOSSLContext
    let serverName: String?
    /// The certificate is verified (not `--upstream-insecure`): its name too (``UpstreamNameCheck``).
    let verifies: Bool

    var name: String { base.name }

    func connect(for connection: ConnectionID, on eventLoop: any EventLoop, timeout: Duration,
                 initializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>) -> EventLoopFuture<any Channel> {
        let (context, verifies) = (self.context, self.verifies)
        let serverName = self.serverName ?? ServerName.sni(forEndpoint: base.name)
        return base.connect(for: connection, on: eventLoop, timeout: timeout) { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(try UpstreamNameCheck.handler(context, serverName: serverName, verifies: verifies))
                try channel.pipeline.syncOperations.addHandler(TLSHandshakeGate(on: channel.eventLoop, limit: timeout, serverName: serverName))
            }.flatMap { initializer(channel) }
        }.flatMap { channel in
            // Connected once the session is good: nothing is written into a handshake that fails.
            let handshake: EventLoopFuture<Void>
            do { handshake = try channel.pipeline.syncOperations.handler(type: TLSHandshakeGate.self).handshake } catch {
                return channel.eventLoop.makeFailedFuture(error)
            }
            return handshake.map { channel }.flatMapErrorThrowing { error in
                // Closed once the failure has reached the connection, which then has let go of
                // the leg: closing now would tell it of an inactive leg it still awaits.
                channel.eventLoop.execute { channel.close(promise: nil) }
                throw error
            }
        }
    }

}
