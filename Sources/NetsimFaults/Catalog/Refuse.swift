import NetsimCore

/// `refuse`: new connections are refused. At 100% the relay closes its listener, so the kernel
/// answers SYNs with RST (a real ECONNREFUSED); below 100% the chosen connections are reset as
/// they are accepted — a userspace relay cannot refuse one SYN and accept the next.
public struct Refuse: Fault {
    public static let name = "refuse"
    public static let scope = FaultScope.accept
    public static let summary = "connect fails with ECONNREFUSED (below 100%: reset at accept)"

    public init() {}
    public init(argument: String?) throws(FaultArgumentError) { try FaultArgumentError.none(argument, for: Self.name) }

    public func makeEffect() -> any FaultEffect { Effect() }

    struct Effect: FaultEffect {
        mutating func applied<Chunk: ByteChunk>(to connection: inout ConnectionMachine<Chunk>, atAccept: Bool) -> EffectLifetime {
            connection.resetAtAccept("reset at accept: a userspace relay cannot refuse one SYN and accept the next (only a relay's own listener, closed at 100%, refuses)")
            return .done
        }
    }
}

extension FaultKind {
    public static var refuse: FaultKind { FaultKind(Refuse()) }
}
