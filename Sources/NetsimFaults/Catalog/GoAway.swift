import NetsimCore

/// `goaway[=graceful|abrupt]`: the server says GOAWAY on HTTP/2 connections, as a rolling
/// deploy or a restart does. `graceful` (the default): NO_ERROR with the last stream it will
/// process — streams in flight finish, new requests must go to a new connection, and the
/// connection closes when the last stream ends. `abrupt`: INTERNAL_ERROR, and the connection
/// closes at once (streams in flight are lost).
///
/// Acts on h2 connections seen through TLS interception (the relay's HTTP/2 layer).
public struct GoAway: Fault {
    public static let name = "goaway"
    public static let syntax = "[=graceful|abrupt]"
    public static let example = "goaway=graceful"
    public static let scope = FaultScope.request
    public static let summary = "h2: GOAWAY; graceful lets streams in flight finish, abrupt closes the connection. Streams a client opens after it are ignored (RFC 9113 §6.8), each logged"

    public enum Mode: String, Sendable, CaseIterable { case graceful, abrupt }

    public var mode: Mode
    public init(_ mode: Mode = .graceful) { self.mode = mode }
    public init(argument: String?) throws(FaultArgumentError) {
        guard let mode = Mode(rawValue: argument ?? Mode.graceful.rawValue) else {
            throw FaultArgumentError("a GOAWAY kind (goaway, goaway=graceful or goaway=abrupt)")
        }
        self.mode = mode
    }
    public var argument: String? { mode == .graceful ? nil : mode.rawValue }

    public func makeEffect() -> any FaultEffect { HTTP2OnlyEffect(name: Self.name) }
}

extension FaultKind {
    public static func goAway(_ mode: GoAway.Mode = .graceful) -> FaultKind { FaultKind(GoAway(mode)) }
}
