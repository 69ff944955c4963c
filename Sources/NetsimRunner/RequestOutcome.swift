import NetsimCore
import NetsimScenario

/// One request of a run and what came of it.
public struct RequestOutcome: Sendable {
    /// The request step's name and this request's index within it (0-based).
    public var name: String
    public var index: Int
    public var method: String
    public var path: String
    /// Nanoseconds on the run's timeline.
    public var started: Int64
    public var finished: Int64
    public var response: DriverResponse
    /// The relay connection that carried it, found from the client's local port.
    public var connection: ConnectionID?
    /// When the relay accepted that connection (scenario time).
    public var connectionOpened: Int64?
    /// Whether an earlier request (by start time) used the same relay connection; nil when
    /// the connection is unknown.
    public var reusedConnection: Bool?

    public var duration: Int64 { finished - started }

    /// `warm #2`, as reports name it (1-based for people).
    public var label: String { "\(name) #\(index + 1)" }

    /// One line: `200 in 12 ms on connection #3`, `reset after 3 ms: Connection reset by peer`,
    /// or `200 in 45 µs from the client's own cache (not on the network)`.
    public var summary: String {
        let time = formatNanoseconds(duration)
        if response.fromClientCache {
            return "\(response.status.map(String.init) ?? "no status") in \(time) from the client's own cache (not on the network)"
        }
        let on = connection.map { " on connection \($0)" } ?? ""
        if let error = response.error {
            let message = response.errorMessage.map { ": \($0)" } ?? ""
            return "\(error.rawValue) after \(time)\(on)\(message)"
        }
        return "\(response.status.map(String.init) ?? "no status") in \(time)\(on)"
    }
}
