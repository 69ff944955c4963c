import NetsimCore

/// `slow-close=DURATION[,up|down]`: each FIN (or each travelling one direction) is held back
/// this long after the bytes ahead of it (Toxiproxy's slow_close, on its stream: `down` is the
/// server's close reaching the client).
public struct SlowClose: Fault {
    public static let name = "slow-close"
    public static let syntax = "=DURATION[,up|down]"
    public static let example = "slow-close=1s"
    public static let scope = FaultScope.connection
    public static let summary = "every FIN (or one direction's) arrives DURATION after the data before it"
    public static let toxic: ToxicMapping? = ToxicMapping("slow_close", origin: .toxiproxy, attributes: [.init("delay", .milliseconds)]) {
        arguments throws(ToxicMapping.Invalid) in [.now(.slowClose(arguments.milliseconds("delay"), arguments.stream))]
    }

    public var delay: Duration
    /// The direction whose FIN waits; nil: both.
    public var direction: Direction?
    public init(_ delay: Duration, _ direction: Direction? = nil) {
        self.delay = delay
        self.direction = direction
    }
    public init(argument: String?) throws(FaultArgumentError) {
        let (text, option) = try FaultArgumentError.option(
            FaultArgumentError.required(argument, for: Self.name), for: Self.name, value: "a duration", options: Direction.allCases.map(\.rawValue))
        direction = option.flatMap(Direction.init(rawValue:))
        delay = try FaultArgumentError.unit(text, for: Self.name) { try Duration(parsing: $0) }
    }
    public var argument: String? { delay.compactDescription + (direction.map { ",\($0.rawValue)" } ?? "") }

    public func makeEffect() -> any FaultEffect { Effect(delay: delay, direction: direction) }

    struct Effect: FaultEffect {
        let delay: Duration
        let direction: Direction?
        mutating func applied<Chunk: ByteChunk>(to connection: inout ConnectionMachine<Chunk>, atAccept: Bool) -> EffectLifetime {
            let which = direction.map { $0 == .up ? "the client's FIN" : "the server's FIN" } ?? "each FIN"
            connection.fire("\(which) is held back \(delay.compactDescription)")
            return .stays
        }
        func finDelay(_ travelling: Direction) -> Int64 { direction == nil || direction == travelling ? delay.nanoseconds : 0 }
    }
}

extension FaultKind {
    public static func slowClose(_ delay: Duration, _ direction: Direction? = nil) -> FaultKind { FaultKind(SlowClose(delay, direction)) }
}
