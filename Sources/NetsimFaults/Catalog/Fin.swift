import NetsimCore

/// `fin`: both legs are closed gracefully now; bytes still in flight are dropped.
public struct Fin: Fault {
    public static let name = "fin"
    public static let scope = FaultScope.connection
    public static let summary = "open connections end with a clean close (EOF); a write after it gets EPIPE/ECONNRESET"

    public init() {}
    public init(argument: String?) throws(FaultArgumentError) { try FaultArgumentError.none(argument, for: Self.name) }

    public func makeEffect() -> any FaultEffect { Effect() }

    struct Effect: FaultEffect {
        mutating func applied<Chunk: ByteChunk>(to connection: inout ConnectionMachine<Chunk>, atAccept: Bool) -> EffectLifetime {
            connection.closeGracefully(detail: "graceful close of both legs")
            return .done
        }
    }
}

extension FaultKind {
    public static var fin: FaultKind { FaultKind(Fin()) }
}
