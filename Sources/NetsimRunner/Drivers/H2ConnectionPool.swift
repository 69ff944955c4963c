import NIOConcurrencyHelpers

/// The h2 connections of a reference client: one per origin, shared by every request to it, as
/// h2 clients share one. Requests that find the origin's first connect under way wait for it
/// instead of opening connections of their own (four parallel requests make one h2 connection,
/// or — when the server chose HTTP/1.1 — the waiters connect on their own, as HTTP/1.1 needs).
final class H2ConnectionPool: Sendable {
    private enum Entry {
        case ready(ReferenceH2Connection)
        case connecting(Task<ReferenceLink, any Error>)
    }

    private let entries = NIOLockedValueBox<[String: Entry]>([:])
    /// Connections no longer shared but maybe still finishing streams (after a GOAWAY): closed
    /// at shutdown if the server has not closed them.
    private let retired = NIOLockedValueBox<[ReferenceH2Connection]>([])

    /// A connection for a request to `key`: the shared h2 connection when `reusable` accepts it
    /// (`reused` is then true), else a new connection made by `connect` — kept and shared when
    /// the server chose h2.
    func link(for key: String, reusable: (ReferenceH2Connection) -> Bool,
              connect: @escaping @Sendable () async throws(ExchangeFailure) -> ReferenceLink) async throws(ExchangeFailure) -> (link: ReferenceLink, reused: Bool) {
        while true {
            let (entry, task) = entries.withLockedValue { entries -> (Entry?, Task<ReferenceLink, any Error>?) in
                if let entry = entries[key] { return (entry, nil) }
                let task = Task<ReferenceLink, any Error> { try await connect() }
                entries[key] = .connecting(task)
                return (nil, task)
            }
            switch entry {
            case .ready(let connection):
                if reusable(connection) { return (.h2(connection), true) }
                forget(connection, of: key)
                continue
            case .connecting(let other):
                // Another request's connect: share it if it made h2, else connect alone.
                if case .h2(let connection)? = try? await other.value, reusable(connection) { return (.h2(connection), false) }
                return (try await connect(), false)
            case nil:
                break
            }
            guard let task else { continue }
            do {
                let link = try await task.value
                entries.withLockedValue { entries in
                    if case .h2(let connection) = link { entries[key] = .ready(connection) } else { entries[key] = nil }
                }
                return (link, false)
            } catch {
                entries.withLockedValue { $0[key] = nil }
                throw (error as? ExchangeFailure) ?? ExchangeFailure(kind: .other, message: "\(error)", beforeResponse: true)
            }
        }
    }

    /// Stops sharing `connection`: new requests to `key` connect anew. Streams in flight on it
    /// go on (a GOAWAY lets them finish); the caller closes it when it is dead.
    func forget(_ connection: ReferenceH2Connection, of key: String) {
        entries.withLockedValue { entries in
            if case .ready(let kept) = entries[key], kept === connection { entries[key] = nil }
        }
        retired.withLockedValue { $0.append(connection) }
    }

    func closeAll() {
        let all = entries.withLockedValue { entries -> [Entry] in
            defer { entries.removeAll() }
            return Array(entries.values)
        }
        for case .ready(let connection) in all { connection.close() }
        for connection in retired.withLockedValue({ $0 }) { connection.close() }
    }
}
