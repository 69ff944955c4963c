import Foundation
import NIOCore
import NIOHTTP1
import NetsimCore

/// The `outage` and `portal` faults: the relay stands in for the server — it parses the
/// client's requests, never forwards them, and answers them itself.
extension ConnectionPair {
    /// The stand-in in force on this connection (the most recently added one if several).
    var activeStandIn: StandIn? {
        persistentFaults.sorted { $0.key.raw > $1.key.raw }.lazy.compactMap { $0.value.standIn }.first
    }

    func startStandIn() {
        if standInRequests == nil {
            standInRequests = .requests()
            standInBytesParsed = 0
        }
        updateReadGates()
    }

    /// The last stand-in lifted: requests go upstream again. A connection that never connected
    /// upstream connects now.
    func endStandIn() {
        guard activeStandIn == nil else { return }
        standInRequests = nil
        standInHead = nil
        if upstream == nil, phase == .relaying, !connectInFlight, !discarding, stale == nil, client.isActive {
            phase = .accepted
            beginConnect(link: relay.link(for: id))
        }
        updateReadGates()
    }

    /// Client bytes while a stand-in acts: parsed, never forwarded; each complete request is
    /// answered after the up direction's delay (the time it would have taken to reach the server).
    func standInReceived(_ buffer: ByteBuffer) {
        guard let decoder = standInRequests, let standIn = activeStandIn else { return }
        if case .portal(let settings) = standIn, standInBytesParsed == 0, buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) == 0x16 {
            let host = TLSClientHello.serverName(in: buffer).map { " for \($0)" } ?? ""
            return breakForPortal(settings.tls, swallowed: buffer.readableBytes, what: "a TLS ClientHello\(host)")
        }
        standInBytesParsed += buffer.readableBytes
        var complete: [HTTPRequestHead] = []
        do {
            try decoder.feed(buffer) { part in
                switch part {
                case .head(let head): standInHead = head
                case .body: break
                case .end:
                    if let head = standInHead { complete.append(head) }
                    standInHead = nil
                }
            }
        } catch {
            if case .portal(let settings) = standIn {
                return breakForPortal(settings.tls, swallowed: buffer.readableBytes, what: "bytes that are not HTTP")
            }
            log(.dropped(.up, count: buffer.readableBytes, fault: standIn.faultName))
            closeGracefully(fault: standIn.faultName, detail: "the client's bytes are not an HTTP request; closing as a server would")
            return
        }
        for head in complete {
            log(.httpRequest(method: head.method.rawValue, path: head.uri, reused: noteAnsweredRequest(), answeredBy: standIn.faultName, tag: head.netsimTag))
            let due = up.markerReleaseTime(arrivedAt: now)
            schedule(after: due - now) { pair in pair.answer(head) }
        }
    }

    /// Counts a request the relay answers; true when it is not the connection's first.
    private func noteAnsweredRequest() -> Bool {
        defer {
            answeredRequests += 1
            http?.noteAnsweredRequest()
        }
        return (http?.requestCount ?? answeredRequests) > 0
    }

    private func answer(_ head: HTTPRequestHead) {
        guard phase != .finished, !discarding, let standIn = activeStandIn else { return }
        let request = "\(head.method.rawValue) \(head.uri)"
        let response: StandInResponse
        switch standIn {
        case .outage(.noHeaders):
            log(.faultFired(fault: "outage", detail: "accepted \(request); the response headers never come"))
            return
        case .outage(let kind):
            response = OutageAnswer.response(kind, now: Date())
            log(.faultFired(fault: "outage", detail: "answered \(request) with \(response.summary)"))
        case .portal(let settings):
            let answer = PortalAnswer(head, settings: settings, now: Date())
            let target = PortalAnswer.target(of: head)
            let what = answer.probe.map { "\($0): \(request) to \(target.host)" } ?? "\(request) to \(target.host.isEmpty ? "no Host" : target.host)"
            log(.faultFired(fault: "portal", detail: "answered \(what) with \(answer.response.summary)"))
            response = answer.response
        }
        let bodyless = head.method == .HEAD
        // A request that asks for the connection to close (or HTTP/1.0) gets what a server gives:
        // `Connection: close` and a FIN after the answer.
        let closing = !head.isKeepAlive
        log(.httpResponse(status: response.status, bytes: bodyless ? 0 : response.body.utf8.count, answeredBy: standIn.faultName))
        down.enqueue(response.bytes(bodyless: bodyless, closing: closing), at: now)
        if closing || (standIn == .outage(.truncated) && !bodyless) {
            let detail = closing ? "closed after the answer, as the request asked (Connection: close)" : "closed short of the declared Content-Length"
            down.enqueue(.closeConnection(fault: standIn.faultName, detail: detail), at: now)
        }
        deliverDue(.down)
    }

    /// A portal meets bytes it cannot answer (TLS above all): reset, close or swallow them.
    private func breakForPortal(_ how: PortalSettings.Break, swallowed: Int, what: String) {
        log(.dropped(.up, count: swallowed, fault: "portal"))
        switch how {
        case .reset, .close:
            let mode: CloseKind = how == .reset ? .rst : .fin
            endClientLeg(mode, fault: "portal", detail: "broke \(what): \(mode.rawValue.uppercased()) to the client, as a portal that cannot answer it does")
        case .hang:
            log(.faultFired(fault: "portal", detail: "swallowed \(what); nothing will answer it (a firewall's DROP)"))
            discarding = true
            updateReadGates()
        }
    }
}
