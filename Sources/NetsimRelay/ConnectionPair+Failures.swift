import NIOCore
import NIOPosix
import NetsimCore
import NetsimFaults

/// How a connection's legs fail: a socket error forwarded as a reset, the relay's own TLS to
/// upstream named in the log, and a failed upstream connect classified for the event log.
extension ConnectionPair {
    func failed(_ leg: Leg, error: any Error) {
        if leg == .upstream {
            switch TLSFailure(error) {
            case .failed(let reason):
                // The relay's own TLS to upstream (interception) failed: a certificate that does
                // not verify, a protocol error. NIOSSL closes the leg next; the log says why.
                relay.eventLog.record(.upstreamFailed(reason: .other, detail: "TLS with upstream failed: \(reason)"), connection: id, at: now)
                return
            case .closedWithoutCloseNotify:
                return  // the leg's end follows, and is logged as the close it is
            case .notTLS:
                break
            }
        }
        // Any socket error (ECONNRESET, EPIPE, ETIMEDOUT, ...) ends this leg abruptly: forward it
        // as a reset. Channel-state errors (writing after close) say nothing about the peer.
        guard error is IOError else { return }
        let now = self.now
        run { $0.peerReset(leg, now: now) }
    }

    /// A failed connect to upstream, classified for the log.
    func upstreamFailed(_ error: any Error) {
        var (reason, detail) = SocketFailureText.classify(error)
        if relay.configuration.forProxyClients { detail = "\(connector.name): \(detail)" }
        guard layer == .http else {
            run { $0.upstreamFailed(reason, detail: detail) }
            // A proxy's client is closed when the proxy gives up on the destination: the end
            // is upstream's (the one it waited for), as through interception below.
            if reason == .timeout, relay.configuration.forProxyClients {
                run { $0.endsForWantOfUpstream() }
                closeNow()
            }
            return
        }
        // Through interception the client's connection is the wire layer's, which logs `closed`:
        // it ends because upstream could not be had. The client holds a session with netsim
        // already, so a timeout closes it too, as the h2 layer does (QA 50: an HTTP/1.1 client
        // was left waiting for its own timeout, an h2 one closed).
        relay.wireLayer(of: id)?.run { $0.endsForWantOfUpstream() }
        run { $0.upstreamFailed(reason, detail: detail) }
        if reason == .timeout { closeNow() }
    }

    /// A proxy's client ended its side while the destination is still being connected (a stand-in
    /// fault configured: the relay connects it): after ``Relay/proxyClientLeaveGrace`` the client
    /// is taken as gone, the connect dropped and the connection closed, as the proxy does before
    /// it hands a connection over. It held its place to the connect timeout (QA 53).
    func letGoIfStillConnecting() {
        schedule(at: now + Relay.proxyClientLeaveGrace.nanoseconds) { [self] _ in
            guard let connecting = connectingUpstream else { return }
            run { $0.upstreamFailed(.other, detail: "\(connector.name): the client closed its connection before the destination was reached; the connect was dropped") }
            connecting.pair = nil
            connecting.close()
            closeNow()
        }
    }
}
