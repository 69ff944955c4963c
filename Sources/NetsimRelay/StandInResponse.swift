import NIOCore

/// A response the relay sends in the server's place (`outage`, `portal`). ``OutageAnswer`` and
/// ``PortalAnswer`` say what it holds; ``bytes(bodyless:closing:)`` alone writes it.
struct StandInResponse {
    var status: Int
    var reason: String
    /// In order; `Content-Length` (and `Connection: close` when asked) follow on the wire.
    var headers: [(String, String)]
    /// The body bytes sent.
    var body: String
    /// The `Content-Length` to declare when it is not the body sent (a truncated answer).
    var declaredLength: Int?
    /// For the event log, e.g. `503 (Retry-After: 2)`.
    var summary: String

    /// The answer on the wire: no body for a HEAD request; `Connection: close` for a request that
    /// asked to close (the relay then closes after it, as a server would).
    func bytes(bodyless: Bool, closing: Bool) -> ByteBuffer {
        var all = headers + [("Content-Length", String(declaredLength ?? body.utf8.count))]
        if closing { all.append(("Connection", "close")) }
        var buffer = ByteBuffer(string: "HTTP/1.1 \(status) \(reason)\r\n" + all.map { "\($0.0): \($0.1)\r\n" }.joined() + "\r\n")
        if !bodyless { buffer.writeString(body) }
        return buffer
    }
}
