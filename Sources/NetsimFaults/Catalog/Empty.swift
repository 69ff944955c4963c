import NetsimCore

/// `empty`: the request reaches the server, but the client gets a clean close and no byte of
/// the answer — WireMock's EMPTY_RESPONSE. The connection closes when the server starts
/// answering (so the server did receive and process the request).
public struct Empty: Fault {
    public static let name = "empty"
    public static let scope = FaultScope.connection
    public static let summary = "the server gets the request; the client gets EOF and no byte of the answer"
    public static let toxic: ToxicMapping? = ToxicMapping("empty", origin: .netsim) { arguments throws(ToxicMapping.Invalid) in
        try arguments.requireDownstream("empty", "drops the answer")
        return [.now(.empty)]
    }

    public init() {}
    public init(argument: String?) throws(FaultArgumentError) { try FaultArgumentError.none(argument, for: Self.name) }

    public func makeEffect() -> any FaultEffect { Effect() }

    struct Effect: FaultEffect {
        var ended = false
        var inspectsBytes: Bool { true }

        mutating func applied<Chunk: ByteChunk>(to connection: inout ConnectionMachine<Chunk>, atAccept: Bool) -> EffectLifetime {
            connection.fire("the next answer never reaches the client: the connection closes when the server starts answering")
            return .stays
        }

        mutating func bytes<Chunk: ByteChunk>(_ chunk: Chunk, _ direction: Direction, on connection: inout ConnectionMachine<Chunk>) -> ByteVerdict {
            guard direction == .down else { return .pass }
            guard !ended else { return .swallow }
            ended = true
            return .cut(keep: 0, then: .init(.fin, "closed before any byte of the answer"))
        }
    }
}

extension FaultKind {
    public static var empty: FaultKind { FaultKind(Empty()) }
}
