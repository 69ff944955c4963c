import NetsimCore

/// `garbage[=BYTES]`: the request reaches the server, but the client gets BYTES of random data
/// (1 KiB by default; seeded, so the same seed sends the same bytes) instead of the answer, then
/// a close — WireMock's RANDOM_DATA_THEN_CLOSE. It acts when the server starts answering.
public struct Garbage: Fault {
    public static let name = "garbage"
    public static let syntax = "[=BYTES]"
    public static let example = "garbage=64"
    public static let scope = FaultScope.connection
    public static let summary = "the answer is replaced by random bytes, then EOF: a parse error in the client"
    /// `bytes` 0 means the default, 1 KiB.
    public static let toxic: ToxicMapping? = ToxicMapping("garbage", origin: .netsim, attributes: [.init("bytes", .bytes)]) {
        arguments throws(ToxicMapping.Invalid) in
        try arguments.requireDownstream("garbage", "replaces the answer")
        let bytes = arguments.bytes("bytes")
        return [.now(.garbage(bytes: bytes == 0 ? defaultBytes : bytes))]
    }
    public static let defaultBytes = 1024

    public var bytes: Int
    public init(bytes: Int = Garbage.defaultBytes) { self.bytes = bytes }
    public init(argument: String?) throws(FaultArgumentError) {
        bytes = argument == nil ? Self.defaultBytes : try FaultArgumentError.unit(argument, for: Self.name) { try ByteCount(parsing: $0).bytes }
        guard bytes > 0 else { throw FaultArgumentError("a positive byte count for garbage (garbage=64, garbage=1KB)") }
    }
    public var argument: String? { bytes == Self.defaultBytes ? nil : String(bytes) }

    public func makeEffect() -> any FaultEffect { Effect(count: bytes) }

    struct Effect: FaultEffect {
        let count: Int
        var ended = false
        var inspectsBytes: Bool { true }

        mutating func applied<Chunk: ByteChunk>(to connection: inout ConnectionMachine<Chunk>, atAccept: Bool) -> EffectLifetime {
            connection.fire("the next answer is replaced by \(count) random bytes, then a close")
            return .stays
        }

        mutating func bytes<Chunk: ByteChunk>(_ chunk: Chunk, _ direction: Direction, on connection: inout ConnectionMachine<Chunk>) -> ByteVerdict {
            guard direction == .down else { return .pass }
            guard !ended else { return .swallow }
            ended = true
            var random = connection.random(for: Garbage.name)
            var garbage: [UInt8] = []
            garbage.reserveCapacity(count + 8)
            while garbage.count < count {
                withUnsafeBytes(of: random.next().littleEndian) { garbage.append(contentsOf: $0) }
            }
            return .replace(with: Array(garbage.prefix(count)), then: .init(.fin, "sent \(count) random bytes instead of the answer, then closed"))
        }
    }
}

extension FaultKind {
    public static func garbage(bytes: Int = Garbage.defaultBytes) -> FaultKind { FaultKind(Garbage(bytes: bytes)) }
}
