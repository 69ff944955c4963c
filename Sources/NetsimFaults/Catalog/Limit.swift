import NetsimCore

/// `limit=BYTES`: after this many more bytes from the server, the connection is closed
/// (Toxiproxy's limit_data).
public struct Limit: Fault {
    public static let name = "limit"
    public static let syntax = "=BYTES"
    public static let example = "limit=10KB"
    public static let scope = FaultScope.connection
    public static let summary = "the answer stops after BYTES more bytes, then a clean close"
    public static let toxic: ToxicMapping? = ToxicMapping("limit_data", origin: .toxiproxy, attributes: [.init("bytes", .bytes)]) {
        arguments throws(ToxicMapping.Invalid) in
        try arguments.requireDownstream("limit_data", "counts bytes")
        return [.now(.limit(bytes: arguments.bytes("bytes")))]
    }

    public var bytes: Int
    public init(bytes: Int) { self.bytes = bytes }
    public init(argument: String?) throws(FaultArgumentError) {
        bytes = try FaultArgumentError.unit(argument, for: Self.name) { try ByteCount(parsing: $0).bytes }
    }
    public var argument: String? { String(bytes) }

    public func makeEffect() -> any FaultEffect { Effect(remaining: bytes) }

    struct Effect: FaultEffect {
        var remaining: Int
        var ended = false
        var inspectsBytes: Bool { true }

        mutating func applied<Chunk: ByteChunk>(to connection: inout ConnectionMachine<Chunk>, atAccept: Bool) -> EffectLifetime {
            connection.fire("closes after \(remaining) more bytes downstream")
            return .stays
        }

        mutating func bytes<Chunk: ByteChunk>(_ chunk: Chunk, _ direction: Direction, on connection: inout ConnectionMachine<Chunk>) -> ByteVerdict {
            guard direction == .down else { return .pass }
            guard !ended else { return .swallow }
            if chunk.count < remaining {
                remaining -= chunk.count
                return .pass
            }
            ended = true
            return .cut(keep: remaining, then: .init(.fin, "closed after the bytes the fault allowed"))
        }
    }
}

extension FaultKind {
    public static func limit(bytes: Int) -> FaultKind { FaultKind(Limit(bytes: bytes)) }
}
