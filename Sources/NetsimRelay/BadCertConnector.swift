import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import NetsimCore
import NetsimFaults
import NetsimTLS

/// The upstream of a connection under `bad-cert`: one end of a loopback TCP pair whose other end
/// is the relay's own TLS server, answering with a wrong certificate. Nothing goes upstream.
///
/// The outcome is logged as the fault's: the client refused the certificate (what it must do), or
/// completed the handshake — a security finding (the detail starts with `SECURITY:`), and each of
/// its requests gets a page that says what happened.
struct BadCertConnector: UpstreamConnector {
    let relay: Relay
    let kind: BadCertificateKind
    /// The fault that answers (`bad-cert`, or a `portal` with `tls=self-signed`).
    let fault: FaultName
    let context: NIOSSLContext

    var name: String { "netsim's own TLS (\(fault): \(kind.rawValue))" }

    func connect(for connection: ConnectionID, on eventLoop: any EventLoop, timeout: Duration,
                 initializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>) -> EventLoopFuture<any Channel> {
        let (relay, kind, fault, context) = (relay, kind, fault, context)
        return LoopbackPair.join(on: eventLoop, wireSide: initializer) { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                try channel.pipeline.syncOperations.addHandler(BadCertWitness(relay: relay, connection: connection, kind: kind, fault: fault))
            }
        }
    }
}

/// Behind the wrong certificate: says whether the client took it. Taking it means sending a
/// request over it — a completed handshake alone proves nothing (clients check the name after it).
private final class BadCertWitness: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let relay: Relay
    private let connection: ConnectionID
    private let kind: BadCertificateKind
    private let fault: FaultName
    private var handshook = false
    private var verdictLogged = false
    /// BoringSSL's reasons when the first bytes are plain HTTP or anything but a TLS record.
    private static let notTLS = ["HTTP_REQUEST", "HTTPS_PROXY_REQUEST", "WRONG_VERSION_NUMBER", "UNKNOWN_PROTOCOL"]

    init(relay: Relay, connection: ConnectionID, kind: BadCertificateKind, fault: FaultName) {
        self.relay = relay
        self.connection = connection
        self.kind = kind
        self.fault = fault
    }

    private func verdict(_ detail: String) {
        guard !verdictLogged else { return }
        verdictLogged = true
        relay.eventLog.record(.faultFired(fault: fault, detail: detail), connection: connection,
                              at: Int64(NIODeadline.now().uptimeNanoseconds))
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event { handshook = true }
        if case ChannelEvent.inputClosed = event { context.close(promise: nil) }  // the client left
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        verdict("SECURITY: the client accepted \(kind.certificate) and sent a request over it; a correct client refuses it")
        let body = "netsim \(fault): this client accepted \(kind.certificate). A correct client refuses it.\n"
        let response = "HTTP/1.1 421 Misdirected Request\r\nContent-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: response))).whenComplete { _ in
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if case .failed(let reason) = TLSFailure(error) {
            if !handshook, Self.notTLS.contains(where: reason.contains) {
                // BoringSSL's reason for a first record that is not a handshake: nothing was
                // refused, and the client is not graded by this fault.
                verdict("the client did not speak TLS (\(reason)); \(fault) tests a TLS client: nothing was judged")
            } else {
                verdict("the client refused \(kind.certificate), as it must (\(reason))")
            }
        }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        verdict(handshook
            ? "the client refused \(kind.certificate), as it must (it closed after the handshake without a request)"
            : "the client refused \(kind.certificate), as it must (it closed during the handshake)")
        context.fireChannelInactive()
    }
}
