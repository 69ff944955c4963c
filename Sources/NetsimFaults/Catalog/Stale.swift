import NetsimCore

/// `stale[=fin|rst]`: the lock-screen incident. The connection looks alive, but the path is
/// dead: the client's next bytes are swallowed and answered with RST (default) or FIN, as a
/// phone whose sockets were closed while locked, or a NAT that forgot the mapping, answers —
/// from the far end of the path, a round trip after the bytes.
/// Lifting the fault does not revive a stale connection.
///
/// On the packet path (`netsim shell`) the host side forgets every connection open when the fault
/// starts: the client's next segment on one is answered with an RST netsim crafts (RST only).
public struct Stale: Fault {
    public static let name = "stale"
    public static let syntax = "[=fin|rst]"
    public static let example = "stale=rst"
    public static let scope = FaultScope.connection
    public static let paths: FaultPaths = [.relay, .packet]
    public static let summary = "open connections look alive; the next write succeeds, then the read after it gets ECONNRESET (EOF with fin) a round trip later (the link's latency up and down), a later write EPIPE"
    public static let toxic: ToxicMapping? = ToxicMapping("stale", origin: .netsim, attributes: [.init("close", .choice(["rst", "fin"]))]) {
        arguments throws(ToxicMapping.Invalid) in [.now(.stale(arguments.string("close") == "fin" ? .fin : .rst))]
    }

    public var close: CloseKind
    public init(_ close: CloseKind = .rst) { self.close = close }
    public init(argument: String?) throws(FaultArgumentError) {
        switch argument {
        case nil, "rst": close = .rst
        case "fin": close = .fin
        default: throw FaultArgumentError("a stale close (stale=fin or stale=rst)")
        }
    }
    public var argument: String? { close.rawValue }

    public func makeEffect() -> any FaultEffect { Effect(close: close) }

    struct Effect: FaultEffect {
        let close: CloseKind
        mutating func applied<Chunk: ByteChunk>(to connection: inout ConnectionMachine<Chunk>, atAccept: Bool) -> EffectLifetime {
            connection.fire("looks alive; the client's next bytes are swallowed and answered with \(close.rawValue.uppercased())")
            connection.goStale(close)
            return .done
        }
    }
}

extension FaultKind {
    public static func stale(_ close: CloseKind) -> FaultKind { FaultKind(Stale(close)) }
}
