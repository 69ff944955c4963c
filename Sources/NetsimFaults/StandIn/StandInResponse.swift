
/// A response the relay sends in the server's place (`outage`, `portal`). ``OutageAnswer`` and
/// ``PortalAnswer`` say what it holds; ``bytes(bodyless:closing:)`` alone writes it.
public struct StandInResponse: Sendable {
    public var status: Int
    public var reason: String
    /// In order; `Content-Length` (and `Connection: close` when asked) follow on the wire.
    public var headers: [(String, String)]
    /// The body bytes sent.
    public var body: String
    /// The `Content-Length` to declare when it is not the body sent (a truncated answer).
    public var declaredLength: Int?
    /// For the event log, e.g. `503 (Retry-After: 2)`.
    public var summary: String

    /// The answer on the wire: no body for a HEAD request; `Connection: close` for a request that
    /// asked to close (the relay then closes after it, as a server would).
    public func bytes(bodyless: Bool, closing: Bool) -> [UInt8] {
        var all = headers + [("Content-Length", String(declaredLength ?? body.utf8.count))]
        if closing { all.append(("Connection", "close")) }
        let head = "HTTP/1.1 \(status) \(reason)\r\n" + all.map { "\($0.0): \($0.1)\r\n" }.joined() + "\r\n"
        return Array(head.utf8) + (bodyless ? [] : Array(body.utf8))
    }
}
