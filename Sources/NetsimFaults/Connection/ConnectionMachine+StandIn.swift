import Foundation
import NetsimCore

/// While a stand-in (`outage`, `portal`) acts, the relay is the server: the client's bytes go to
/// the request parser, never upstream, and each request is answered when it would have reached
/// the server (after the up direction's delay).
extension ConnectionMachine {
    mutating func standInReceived(_ chunk: Chunk, now: Int64) {
        guard let standIn else { return }
        if pendingRefusal != nil {  // refused already; the close is on its way
            return log(.dropped(.up, count: chunk.count, fault: actingFault))
        }
        if standInBytesParsed == 0, let refusal = standIn.refuses(firstBytes: chunk.bytes) {
            actingFault = standIn.faultName
            if case .impersonate(let kind) = refusal.how {
                return impersonate(kind, answering: refusal.what, first: chunk, now: now)
            }
            return refuse(refusal, swallowed: chunk.count, now: now)
        }
        standInBytesParsed += chunk.count
        actions.append(.parseRequests(chunk))
    }

    /// The parser found a complete request in the client's bytes.
    public mutating func requestReceived(_ request: HTTPRequestSummary, now: Int64) {
        self.now = now
        guard let standIn, phase != .finished else { return }
        log(.httpRequest(method: request.method, path: request.uri, reused: countRequest(), answeredBy: standIn.faultName.rawValue, tag: request.tag, version: request.version))
        let sent = sendTime(.up, now)
        let due = withLane(.up) { $0.markerReleaseTime(arrivedAt: sent) }
        nextAnswer += 1
        pendingAnswers[nextAnswer] = request
        if due <= now {
            timerFired(.answer(nextAnswer), now: now)
        } else {
            actions.append(.arm(.answer(nextAnswer), at: due))
        }
    }

    /// The client's bytes (`count` of them) do not parse as HTTP.
    public mutating func requestUnparseable(count: Int, now: Int64) {
        self.now = now
        guard let standIn, phase != .finished else { return }
        actingFault = standIn.faultName
        if let refusal = standIn.refusesUnparseable() {
            return refuse(refusal, swallowed: count, now: now)
        }
        log(.dropped(.up, count: count, fault: standIn.faultName))
        closeGracefully(detail: "the client's bytes are not an HTTP request; closing as a server would")
    }

    /// Counts a request on this connection; true when it is not the first. A connection the
    /// relay did not watch as HTTP before a stand-in took over (an outage from `--fault-at`)
    /// has had requests when client bytes already went upstream: its first answered request
    /// was logged `reused: false`.
    mutating func countRequest() -> Bool {
        defer { requestsSeen += 1 }
        return requestsSeen > 0 || !observesHTTP && up.deliveredBytes + up.queuedBytes > 0
    }

    mutating func answer(_ request: HTTPRequestSummary, now: Int64) {
        guard phase != .finished, !discarding, let standIn else { return }
        actingFault = standIn.faultName
        switch standIn.reply(to: request, now: Date()) {
        case .silent(let detail):
            fire(detail)
        case .respond(let response, let detail, let truncated):
            fire(detail)
            let bodyless = request.method == "HEAD"
            // A request that asks for the connection to close (or HTTP/1.0) gets what a server
            // gives: `Connection: close` and a FIN after the answer.
            let closing = !request.isKeepAlive
            log(.httpResponse(status: response.status, bytes: bodyless ? 0 : response.body.utf8.count, answeredBy: standIn.faultName.rawValue))
            _ = withLane(.down) { $0.enqueue(Chunk(bytes: response.bytes(bodyless: bodyless, closing: closing)), at: now) }
            if closing || (truncated && !bodyless) {
                let detail = closing ? "closed after the answer, as the request asked (Connection: close)" : "closed short of the declared Content-Length"
                endAfterQueued(.down, .init(.fin, detail), now: now)
            } else {
                deliverDue(.down, now: now)
            }
        }
    }

    /// A stand-in meets bytes it will not answer (TLS above all): close, reset or swallow them.
    /// A close reaches the client as an answer would: once the bytes reached the stand-in (the
    /// up direction's delay) and the close came back (the down direction's latency). It came at
    /// once, a round trip early.
    private mutating func refuse(_ refusal: StandInRefusal, swallowed: Int, now: Int64) {
        log(.dropped(.up, count: swallowed, fault: actingFault))
        if case .close = refusal.how {
            let sent = sendTime(.up, now)
            let reached = withLane(.up) { $0.markerReleaseTime(arrivedAt: sent) }
            let due = reached.addingSaturating(max(0, link.down.latency.nanoseconds))
            pendingRefusal = refusal
            guard due <= now else { return actions.append(.arm(.refusal, at: due)) }
            return refusalArrived()
        }
        act(on: refusal)
    }

    /// The close a stand-in decided on reaches the client.
    mutating func refusalArrived() {
        guard let refusal = pendingRefusal, phase != .finished else { return }
        act(on: refusal)
    }

    private mutating func act(on refusal: StandInRefusal) {
        switch refusal.how {
        case .close(let how):
            endClientLeg(how, detail: "broke \(refusal.what): \(how.rawValue.uppercased()) to the client, as a portal that cannot answer it does")
        case .hang:
            fire("swallowed \(refusal.what); nothing will answer it (a firewall's DROP)")
            discarding = true
            discardedFor = actingFault
            recomputePlain()
            updateReadGates()
        case .impersonate(let kind):
            preconditionFailure("a stand-in impersonates only a handshake it has the bytes of (\(kind))")
        }
    }

    /// The stand-in answers this connection's TLS itself with a `kind` certificate: the connection
    /// leaves the stand-in and connects to the relay's own TLS server (as under `bad-cert`), the
    /// handshake's first bytes going there first.
    private mutating func impersonate(_ kind: BadCertificateKind, answering what: String, first chunk: Chunk, now: Int64) {
        fire("answered \(what) with \(kind.certificate) of its own, as a portal that intercepts HTTPS does")
        impersonating = (kind, actingFault)
        standIn = nil
        recomputePlain()
        phase = .accepted
        beginConnect(now: now)
        forward(chunk, .up, now: now)
    }

    /// The last stand-in lifted: requests go upstream again. A connection that never connected
    /// upstream connects now.
    mutating func endStandIn(now: Int64) {
        standInBytesParsed = 0
        actions.append(.stopParsingRequests)
        if upstream == .none, phase == .relaying, !discarding, stale == nil, client.active {
            phase = .accepted
            beginConnect(now: now)
        }
        updateReadGates()
    }
}
