import NIOCore

/// One accepted connection of the built-in upstream, as its request log numbers it: shared by
/// its HTTP/2 streams so the second stream's request knows the connection was reused.
///
/// `@unchecked Sendable`: touched only on the connection's event loop (its streams run there too).
final class ServedConnection: @unchecked Sendable {
    /// 1-based, in accept order.
    let number: Int
    private(set) var requestCount = 0
    /// When a server across the simulated link would have accepted the connection (see
    /// ``BuiltinServer/allowForHandshake(_:)``); nil: when it was accepted.
    let acceptedOnTheLink: NIODeadline?

    init(number: Int, acceptedOnTheLink: NIODeadline? = nil) {
        self.number = number
        self.acceptedOnTheLink = acceptedOnTheLink
    }

    /// When a connection idle from now is idle for `timeout`: from now, or, before its first
    /// request, from when it was accepted on the link if that is later.
    func idleDeadline(after timeout: TimeAmount) -> NIODeadline {
        let now = NIODeadline.now()
        guard requestCount == 0, let accepted = acceptedOnTheLink, accepted > now else { return now + timeout }
        return accepted + timeout
    }

    /// Counts a request; whether one came before it on this connection.
    func countRequest() -> Bool {
        requestCount += 1
        return requestCount > 1
    }
}
