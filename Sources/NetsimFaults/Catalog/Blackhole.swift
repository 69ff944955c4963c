import NetsimCore

/// `blackhole`: nothing moves either way and nothing closes; a new connection is accepted but
/// never connected upstream. What is in flight is held, not lost, and delivered when the fault
/// lifts (as TCP's retransmissions would deliver it).
///
/// On the packet path (`netsim shell`) every packet vanishes both ways: a connect waits out the
/// kernel's real SYN retries, open connections retransmit until it lifts.
public struct Blackhole: Fault {
    public static let name = "blackhole"
    public static let scope = FaultScope.connection
    public static let paths: FaultPaths = [.relay, .packet]
    public static let summary = "connects, then silence both ways until the client times out"
    public init() {}
    public init(argument: String?) throws(FaultArgumentError) { try FaultArgumentError.none(argument, for: Self.name) }

    public func makeEffect() -> any FaultEffect { Effect() }

    struct Effect: FaultEffect {
        mutating func applied<Chunk: ByteChunk>(to connection: inout ConnectionMachine<Chunk>, atAccept: Bool) -> EffectLifetime {
            connection.fire("nothing is forwarded either way until the fault lifts")
            return .stays
        }
        func holds(_ direction: Direction) -> Bool { true }
        var holdsConnect: Bool { true }
    }
}

extension FaultKind {
    public static var blackhole: FaultKind { FaultKind(Blackhole()) }
}
