import NetsimCore

/// `slow-close=DURATION`: each FIN is held back this long after the bytes ahead of it
/// (Toxiproxy's slow_close).
public struct SlowClose: Fault {
    public static let name = "slow-close"
    public static let syntax = "=DURATION"
    public static let example = "slow-close=1s"
    public static let scope = FaultScope.connection
    public static let summary = "every FIN arrives DURATION after the data before it"
    public static let toxic: ToxicMapping? = ToxicMapping("slow_close", origin: .toxiproxy, attributes: [.init("delay", .milliseconds)]) {
        arguments throws(ToxicMapping.Invalid) in [.now(.slowClose(arguments.milliseconds("delay")))]
    }

    public var delay: Duration
    public init(_ delay: Duration) { self.delay = delay }
    public init(argument: String?) throws(FaultArgumentError) {
        delay = try FaultArgumentError.unit(argument, for: Self.name) { try Duration(parsing: $0) }
    }
    public var argument: String? { delay.compactDescription }

    public func makeEffect() -> any FaultEffect { Effect(delay: delay) }

    struct Effect: FaultEffect {
        let delay: Duration
        mutating func applied<Chunk: ByteChunk>(to connection: inout ConnectionMachine<Chunk>, atAccept: Bool) -> EffectLifetime {
            connection.fire("each FIN is held back \(delay.compactDescription)")
            return .stays
        }
        var finDelay: Int64 { delay.nanoseconds }
    }
}

extension FaultKind {
    public static func slowClose(_ delay: Duration) -> FaultKind { FaultKind(SlowClose(delay)) }
}
