import NetsimCore

/// An HTTP message the observer found in forwarded bytes, waiting to be logged until its last
/// byte has been written on: `through` is its direction's byte count that includes it.
struct UnsentHTTP: Sendable {
    enum Message: Sendable {
        case request(HTTPRequestSummary)
        case response(status: Int, bytes: Int)
    }

    let through: Int
    let message: Message
}

/// The observer's requests and responses are logged when they reach the far side, not when the
/// relay read them: `http_request` when its bytes were written to the server, `http_response`
/// when its last byte was written to the client. On an unimpaired link that is at once; a
/// latency logs them one delay later, as the server and the client see them; a message the
/// connection ends with still held back (a blackhole's, a stall's) is never logged, and its
/// bytes are `dropped`.
extension ConnectionMachine {
    /// The HTTP observer saw a request head in the bytes forwarded upstream. Requests answered by
    /// a stand-in and forwarded ones are numbered on one count (`reused`), when logged.
    public mutating func requestForwarded(_ request: HTTPRequestSummary) {
        observed(.request(request), .up)
    }

    /// The HTTP observer saw a response end in the bytes forwarded to the client.
    public mutating func responseForwarded(status: Int, bytes: Int) {
        observed(.response(status: status, bytes: bytes), .down)
    }

    private mutating func observed(_ message: UnsentHTTP.Message, _ direction: Direction) {
        let lane = direction == .up ? up : down
        let through = lane.deliveredBytes + lane.queuedBytes
        if through <= lane.deliveredBytes, unsent(direction).isEmpty { return log(message) }
        if direction == .up { unsentHTTP.up.append(UnsentHTTP(through: through, message: message)) }
        else { unsentHTTP.down.append(UnsentHTTP(through: through, message: message)) }
    }

    /// Logs the observed messages of `direction` whose bytes have all been written.
    mutating func logHTTPSent(_ direction: Direction) {
        let pending = unsent(direction)
        guard !pending.isEmpty else { return }
        let delivered = direction == .up ? up.deliveredBytes : down.deliveredBytes
        let sent = pending.prefix { $0.through <= delivered }
        for entry in sent { log(entry.message) }
        if direction == .up { unsentHTTP.up.removeFirst(sent.count) } else { unsentHTTP.down.removeFirst(sent.count) }
    }

    private func unsent(_ direction: Direction) -> [UnsentHTTP] {
        direction == .up ? unsentHTTP.up : unsentHTTP.down
    }

    private mutating func log(_ message: UnsentHTTP.Message) {
        switch message {
        case .request(let request):
            log(.httpRequest(method: request.method, path: request.uri, reused: countRequest(), tag: request.tag, version: request.version))
        case .response(let status, let bytes):
            log(.httpResponse(status: status, bytes: bytes))
        }
    }
}
