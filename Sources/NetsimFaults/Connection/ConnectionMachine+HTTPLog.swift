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
        // Nothing of the direction still queued (and nothing logged ahead of it waiting): its
        // bytes are written already.
        let (delivered, queued) = lane(direction) { ($0.deliveredBytes, $0.queuedBytes) }
        if queued == 0, withUnsent(direction, { $0.isEmpty }) { return log(message) }
        withUnsent(direction) { $0.append(UnsentHTTP(through: delivered + queued, message: message)) }
    }

    /// Logs the observed messages of `direction` whose bytes have all been written.
    mutating func logHTTPSent(_ direction: Direction) {
        guard withUnsent(direction, { !$0.isEmpty }) else { return }
        let delivered = lane(direction) { $0.deliveredBytes }
        let sent = withUnsent(direction) { pending in
            let count = pending.prefix { $0.through <= delivered }.count
            defer { pending.removeFirst(count) }
            return pending.prefix(count).map(\.message)
        }
        for message in sent { log(message) }
    }

    private mutating func withUnsent<R>(_ direction: Direction, _ body: (inout [UnsentHTTP]) -> R) -> R {
        direction == .up ? body(&unsentHTTP.up) : body(&unsentHTTP.down)
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
