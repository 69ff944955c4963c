import NetsimCore
import NetsimFaults

/// Which part of a client connection a ``ConnectionPair`` carries. Without TLS interception one
/// pair carries the whole connection; with it, two pairs share the connection's id: the wire
/// layer (the client's TCP connection, encrypted bytes) and the HTTP layer behind the TLS
/// termination.
enum ConnectionLayer: Sendable {
    case whole
    /// The client's TCP connection of an intercepted one: the link model, accept and connection
    /// faults act here, on the bytes as they cross the wire (a handshake costs its round trips).
    case wire
    /// Plaintext behind netsim's TLS termination: HTTP is observed here and request faults
    /// (`outage`, `portal`) answer here; no link model (the wire layer has applied it).
    case http

    /// Whether a fault acts on this layer. A request fault that answers TLS itself (a portal
    /// with `tls=self-signed`) acts on the wire of connections accepted while it is in force:
    /// their handshake is the portal's, not netsim's interception.
    func takes(_ kind: FaultKind, atAccept: Bool) -> Bool {
        switch self {
        case .whole: true
        case .wire: kind.scope != .request || (atAccept && kind.answersTLSItself)
        case .http: kind.scope == .request
        }
    }

    /// Whether this layer records events of that kind. The HTTP layer records only what is its
    /// own — HTTP, its faults, and a failure to reach the real upstream — so the connection is
    /// opened, counted and closed once in the log, by its wire layer.
    func records(_ kind: EventKind) -> Bool {
        guard self == .http else { return true }
        switch kind {
        case .httpRequest, .httpResponse, .httpUnobserved, .faultFired, .dropped, .upstreamFailed: return true
        default: return false
        }
    }

    /// Whether HTTP is visible here (given the relay observes HTTP at all).
    var seesHTTP: Bool { self != .wire }
}
