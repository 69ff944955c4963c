import NetsimCore

/// `slow-connect=DURATION`: the relay waits this long before connecting upstream (a slow
/// server accept, a far-away backend). The client's bytes wait in the relay meanwhile.
public struct SlowConnect: Fault {
    public static let name = "slow-connect"
    public static let syntax = "=DURATION"
    public static let example = "slow-connect=2s"
    public static let scope = FaultScope.accept
    public static let summary = "the first answer comes DURATION late (the upstream connect waits)"
    public static let toxic: ToxicMapping? = ToxicMapping("slow_connect", origin: .netsim, attributes: [.init("delay", .milliseconds)]) {
        arguments throws(ToxicMapping.Invalid) in [.now(.slowConnect(arguments.milliseconds("delay")))]
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
            connection.fire("upstream connect delayed by \(delay.compactDescription)")
            connection.delayConnect(by: delay.nanoseconds)
            return .done
        }
    }
}

extension FaultKind {
    public static func slowConnect(_ delay: Duration) -> FaultKind { FaultKind(SlowConnect(delay)) }
}
