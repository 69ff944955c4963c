import NIOCore
import NIOHTTP1
import NetsimCore
import NetsimFaults
import NetsimRoutes

/// The HTTP layer of a connection: the request parser a stand-in answers from, and the observer
/// that logs requests and responses passing through. Both report to the machine.
extension ConnectionPair {
    /// Starts observing HTTP (the relay's `observeHTTP`): requests are numbered by the machine,
    /// together with those a stand-in answers, and both requests and responses are logged by it
    /// once their bytes have been written on.
    func startObserving() {
        let id = self.id, log = relay.eventLog, scheme = self.scheme
        http = HTTPObserver(
            request: { [unowned self] head in run { $0.requestForwarded(head.summary(scheme: scheme)) } },
            response: { [unowned self] status, bytes in run { $0.responseForwarded(status: status, bytes: bytes) } },
            log: { [unowned self] kind in log.record(kind, connection: id, at: now) })
    }

    /// Client bytes while a stand-in acts: parsed, never forwarded.
    func parseRequests(_ buffer: ByteBuffer) {
        let parser = requestsParser()
        var complete: [HTTPRequestHead] = []
        do {
            for segment in headEscaper.segments(of: buffer) {
                try parser.feed(segment) { part in
                    switch part {
                    case .head(let head): requestHead = head
                    case .body: break
                    case .end:
                        if let head = requestHead { complete.append(head) }
                        requestHead = nil
                        headEscaper.requestEnded()
                    }
                }
            }
        } catch {
            let now = self.now
            run { $0.requestUnparseable(count: buffer.readableBytes, now: now) }
            return
        }
        for head in complete {
            let now = self.now
            let request = head.summary(scheme: scheme)
            run { $0.requestReceived(request, now: now) }
        }
    }
}

extension ConnectionPair {
    /// The scheme the client's requests on this connection were sent with: the HTTP layer of an
    /// intercepted connection reads them inside TLS (QA 48: a portal's `continue=` said http://
    /// for an HTTPS page).
    var scheme: String { layer == .http ? "https" : "http" }
}

extension HTTPRequestHead {
    /// What stand-ins and the log need of a request head.
    func summary(scheme: String) -> HTTPRequestSummary {
        HTTPRequestSummary(method: method.rawValue, uri: uri,
                           headers: headers.map { HTTPHeader($0.name, $0.value) },
                           isKeepAlive: isKeepAlive,
                           version: HTTPWireVersion(major: Int(version.major), minor: Int(version.minor)),
                           scheme: scheme)
    }
}
