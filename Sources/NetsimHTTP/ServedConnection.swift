import NIOCore

/// One accepted connection of the built-in upstream, as its request log numbers it: shared by
/// its HTTP/2 streams so the second stream's request knows the connection was reused.
///
/// `@unchecked Sendable`: touched only on the connection's event loop (its streams run there too).
final class ServedConnection: @unchecked Sendable {
    /// 1-based, in accept order.
    let number: Int
    private(set) var requestCount = 0

    init(number: Int) { self.number = number }

    /// Counts a request; whether one came before it on this connection.
    func countRequest() -> Bool {
        requestCount += 1
        return requestCount > 1
    }
}
