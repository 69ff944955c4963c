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
}
