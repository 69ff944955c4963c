import NetsimCore
import NetsimFaults
import NetsimLink

/// What the relay asks of a connection from outside its sockets: a fault applied or lifted, a
/// new link, its stop; and what the tap (pcap) is told of the legs the relay opens and ends.
extension ConnectionPair {
    func apply(_ kind: FaultKind, id fault: FaultID, atAccept: Bool) {
        guard layer.takes(kind, atAccept: atAccept) else { return }
        let now = self.now
        run { $0.apply(kind, id: fault, atAccept: atAccept, now: now) }
    }

    func lift(_ fault: FaultID) {
        let now = self.now
        run { $0.lift(fault, now: now) }
    }

    func update(link: LinkConfiguration) {
        timeReads(for: link)
        let now = self.now
        run { $0.update(link: link, now: now) }
    }

    /// The relay's stop: both legs closed now, and a leg whose socket holds bytes never read
    /// (a blackhole's, a full buffer's) reset, as close(2) over them would.
    func closeNow() {
        var unread: [Leg: Int] = [:]
        for leg in [Leg.client, .upstream] { unread[leg] = handler(leg)?.unreadBytes }
        run { $0.closeNow(unread: unread) }
    }

    func tapOpened(_ leg: Leg) {
        guard let tap, let handler = handler(leg) else { return }
        tap.legOpened(id, leg: leg.side, local: handler.localAddress, remote: handler.remoteAddress, at: now)
    }

    func tapEnded(_ leg: Leg, _ how: CloseKind) {
        tap?.ended(id, leg: leg.side, how, fromPeer: false, at: now)
    }
}
