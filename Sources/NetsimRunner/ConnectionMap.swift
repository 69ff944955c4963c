import NetsimCore
import NetsimRoutes
import NetsimRelay

/// Which relay connection carried a request: the client reports its local port, the relay
/// logged each accepted client's address.
struct ConnectionMap {
    private var opened: [Int: [(time: Int64, id: ConnectionID)]] = [:]
    private var openedAt: [ConnectionID: Int64] = [:]
    /// Each request tag's appearances on the relay, in time order.
    private var tagged: [String: [(time: Int64, id: ConnectionID)]] = [:]

    /// - Parameters:
    ///   - serverRequests, peers: on a packet link (no relay to read the tags, no NAT), the
    ///     built-in server's requests and the peer address of each of its connections: a tagged
    ///     request on the connection from client port P went over the connection the link saw
    ///     open from P (for clients that cannot tell their local port, URLSession).
    init(events: [Event], serverRequests: [ServerRequest] = [], peers: [Int: Endpoint] = [:]) {
        for event in events {
            guard let id = event.connection else { continue }
            switch event.kind {
            case .opened(let client):
                openedAt[id] = event.time
                if let port = client?.port { opened[port, default: []].append((event.time, id)) }
            case .httpRequest(_, _, _, _, let tag?, _, _):
                tagged[tag, default: []].append((event.time, id))
            default:
                break
            }
        }
        for request in serverRequests {
            guard let tag = request.tag, let port = peers[request.connection]?.port,
                  let carried = connection(port: port, before: request.time) else { continue }
            tagged[tag, default: []].append((request.time, carried.id))
        }
    }

    /// The connection opened from `port` most recently before `time` (ports are reused).
    func connection(port: Int, before time: Int64) -> (time: Int64, id: ConnectionID)? {
        opened[port]?.last { $0.time <= time }
    }

    /// The connection the relay saw request `tag` on last before `time`.
    func connection(tagged tag: String, before time: Int64) -> ConnectionID? {
        tagged[tag]?.last { $0.time <= time }?.id
    }

    /// Fills in each outcome's connection and whether an earlier request used it: from the
    /// client's local port, or — for a client that cannot tell it (URLSession) — from the
    /// relay's record of the request's tag (its last attempt before it finished).
    func attach(to outcomes: [RequestOutcome]) -> [RequestOutcome] {
        var seen: Set<ConnectionID> = []
        return outcomes.sorted { $0.started < $1.started }.map { outcome in
            var outcome = outcome
            let tag = RequestTag.value(name: outcome.name, index: outcome.index)
            let found = outcome.response.localPort.flatMap { connection(port: $0, before: outcome.finished) }
                ?? tagged[tag]?.last(where: { $0.time <= outcome.finished }).flatMap { carried in
                    openedAt[carried.id].map { (time: $0, id: carried.id) }
                }
            if let (opened, id) = found {
                outcome.connection = id
                outcome.connectionOpened = opened
                outcome.reusedConnection = !seen.insert(id).inserted
            }
            return outcome
        }
    }
}
