import NetsimCore

/// A fault's state on one connection, and its hooks: the connection calls them at fixed points
/// (when the fault is applied, on bytes in each direction, on its own timer, when it lifts). Every
/// hook has a default that does nothing, so a fault implements only the points it acts at.
///
/// Hooks get the connection as `inout` and act through its fault API (``ConnectionMachine/fire(_:_:)``,
/// ``ConnectionMachine/closeGracefully(fault:detail:)``, ``ConnectionMachine/endClientLeg(_:fault:detail:)``,
/// …); they never see sockets or event loops, so a fault is tested by feeding a machine events.
public protocol FaultEffect: Sendable {
    /// The fault is applied to the connection (at accept when `atAccept`). Returns whether it
    /// stays in force (`.stays`) until lifted, or has done all it does (`.done`).
    mutating func applied<Chunk: ByteChunk>(to connection: inout ConnectionMachine<Chunk>, atAccept: Bool) -> EffectLifetime

    /// Bytes arrived travelling `direction`; the first verdict other than `.pass` decides.
    mutating func bytes<Chunk: ByteChunk>(_ chunk: Chunk, _ direction: Direction, on connection: inout ConnectionMachine<Chunk>) -> ByteVerdict

    /// A timer the effect armed with ``ConnectionMachine/armFaultTimer(_:at:)`` fired.
    mutating func timerFired<Chunk: ByteChunk>(on connection: inout ConnectionMachine<Chunk>)

    /// The fault was removed; the connection has already forgotten it.
    mutating func lifted<Chunk: ByteChunk>(from connection: inout ConnectionMachine<Chunk>)

    /// Whether bytes and closes travelling `direction` are held back (not delivered, the source
    /// not read) while the fault is in force.
    func holds(_ direction: Direction) -> Bool
    /// Whether the upstream connect waits until the fault lifts.
    var holdsConnect: Bool { get }
    /// How long each FIN travelling `direction` waits behind the bytes ahead of it.
    func finDelay(_ direction: Direction) -> Int64
    /// Whether ``bytes(_:_:on:)`` wants to see bytes (false: the connection skips it).
    var inspectsBytes: Bool { get }
    /// The stand-in answering requests in the server's place, if the fault is one.
    var standIn: (any StandIn)? { get }
    /// `bad-cert`: the relay answers the client's TLS handshake itself with this kind of wrong
    /// certificate, instead of connecting upstream.
    var impersonation: BadCertificateKind? { get }
}

extension FaultEffect {
    public mutating func bytes<Chunk: ByteChunk>(_ chunk: Chunk, _ direction: Direction, on connection: inout ConnectionMachine<Chunk>) -> ByteVerdict { .pass }
    public mutating func timerFired<Chunk: ByteChunk>(on connection: inout ConnectionMachine<Chunk>) {}
    public mutating func lifted<Chunk: ByteChunk>(from connection: inout ConnectionMachine<Chunk>) {}
    public func holds(_ direction: Direction) -> Bool { false }
    public var holdsConnect: Bool { false }
    public func finDelay(_ direction: Direction) -> Int64 { 0 }
    public var inspectsBytes: Bool { false }
    public var standIn: (any StandIn)? { nil }
    public var impersonation: BadCertificateKind? { nil }
}

/// Whether a fault keeps acting after it was applied.
public enum EffectLifetime: Sendable {
    /// It acts until lifted (blackhole, limit, outage, …).
    case stays
    /// It did everything when applied (fin, rst, reject, …).
    case done
}

/// What happens to bytes a fault looked at.
public enum ByteVerdict: Equatable, Sendable {
    /// Forwarded as usual.
    case pass
    /// Dropped (logged as dropped by the fault).
    case swallow
    /// The first `keep` bytes are forwarded, the rest dropped, and the connection then ends.
    case cut(keep: Int, then: Ending)
    /// These bytes go to the far side instead, and the connection then ends.
    case replace(with: [UInt8], then: Ending)

    /// How a fault ends a connection once the bytes it let through have been delivered.
    public struct Ending: Equatable, Sendable {
        public var how: CloseKind
        public var detail: String
        public init(_ how: CloseKind, _ detail: String) {
            self.how = how
            self.detail = detail
        }
    }
}
