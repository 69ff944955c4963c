import NetsimCore

/// `limit=BYTES[,up|down]`: after this many more bytes from the server (`down`, the default) or
/// from the client (`up`), the connection is closed (Toxiproxy's limit_data, on either stream).
public struct Limit: Fault {
    public static let name = "limit"
    public static let syntax = "=BYTES[,up|down]"
    public static let example = "limit=10KB"
    public static let scope = FaultScope.connection
    public static let summary = "the answer (with up: the request stream) stops after BYTES more bytes, then a clean close"
    public static let toxic: ToxicMapping? = ToxicMapping("limit_data", origin: .toxiproxy, attributes: [.init("bytes", .bytes)]) {
        arguments throws(ToxicMapping.Invalid) in
        [.now(.limit(bytes: arguments.bytes("bytes"), arguments.stream))]
    }

    public var bytes: Int
    /// Whose bytes are counted: the server's (`down`) or the client's (`up`).
    public var direction: Direction
    public init(bytes: Int, _ direction: Direction = .down) {
        self.bytes = bytes
        self.direction = direction
    }
    public init(argument: String?) throws(FaultArgumentError) {
        let (text, option) = try FaultArgumentError.option(
            FaultArgumentError.required(argument, for: Self.name), for: Self.name, value: "a byte count", options: ["up", "down"])
        direction = option == "up" ? .up : .down
        bytes = try FaultArgumentError.unit(text, for: Self.name) { try ByteCount(parsing: $0).bytes }
    }
    public var argument: String? { direction == .up ? "\(bytes),up" : String(bytes) }

    public func makeEffect() -> any FaultEffect { Effect(remaining: bytes, direction: direction) }

    struct Effect: FaultEffect {
        var remaining: Int
        let direction: Direction
        var ended = false
        var inspectsBytes: Bool { true }

        mutating func applied<Chunk: ByteChunk>(to connection: inout ConnectionMachine<Chunk>, atAccept: Bool) -> EffectLifetime {
            connection.fire("closes after \(remaining) more bytes \(direction == .down ? "downstream" : "upstream")")
            return .stays
        }

        mutating func bytes<Chunk: ByteChunk>(_ chunk: Chunk, _ direction: Direction, on connection: inout ConnectionMachine<Chunk>) -> ByteVerdict {
            guard direction == self.direction else { return .pass }
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
    public static func limit(bytes: Int, _ direction: Direction = .down) -> FaultKind { FaultKind(Limit(bytes: bytes, direction)) }
}
