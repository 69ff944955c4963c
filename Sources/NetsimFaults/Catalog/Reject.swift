import NetsimCore

/// `reject`: each new connection is accepted and reset at once — a firewall's REJECT with
/// tcp-reset after the handshake, a load balancer with no healthy backend. Unlike `refuse`, the
/// relay sees every attempt, so a scenario can judge how a client spaces its retries.
public struct Reject: Fault {
    public static let name = "reject"
    public static let scope = FaultScope.accept
    public static let summary = "connect succeeds, then ECONNRESET before any byte"
    public static let toxic: ToxicMapping? = ToxicMapping("reject", origin: .netsim) { _ throws(ToxicMapping.Invalid) in [.now(.reject)] }

    public init() {}
    public init(argument: String?) throws(FaultArgumentError) { try FaultArgumentError.none(argument, for: Self.name) }

    public func makeEffect() -> any FaultEffect { Effect() }

    struct Effect: FaultEffect {
        mutating func applied<Chunk: ByteChunk>(to connection: inout ConnectionMachine<Chunk>, atAccept: Bool) -> EffectLifetime {
            connection.resetAtAccept("reset at accept, as a firewall's REJECT or a load balancer with no backend does")
            return .done
        }
    }
}

extension FaultKind {
    public static var reject: FaultKind { FaultKind(Reject()) }
}
