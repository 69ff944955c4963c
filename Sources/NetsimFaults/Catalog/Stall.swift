import NetsimCore

/// `stall[=up|down]`: the connection stays open but one direction (both without an argument)
/// stops moving — no byte, no FIN, no RST — until the fault lifts: the cable pulled out mid-
/// connection. Unlike `blackhole`, a new connection still connects upstream, and the other
/// direction keeps flowing. Held bytes are delivered when it lifts; the source is not read past
/// the relay's buffer, so the sender feels TCP's backpressure.
public struct Stall: Fault {
    public static let name = "stall"
    public static let syntax = "[=up|down]"
    public static let example = "stall=down"
    public static let scope = FaultScope.connection
    public static let summary = "the connection stays open; one direction stops (no byte, no close) until lifted"
    /// Toxiproxy's `stream` picks the direction: downstream stalls answers, upstream requests.
    public static let toxic: ToxicMapping? = ToxicMapping("stall", origin: .netsim) {
        arguments throws(ToxicMapping.Invalid) in [.now(.stall(arguments.stream))]
    }

    /// The direction that stops; nil: both.
    public var direction: Direction?
    public init(_ direction: Direction? = nil) { self.direction = direction }
    public init(argument: String?) throws(FaultArgumentError) {
        direction = try FaultArgumentError.direction(argument, for: Self.name, what: "a stalled direction")
    }
    public var argument: String? { direction?.rawValue }

    public func makeEffect() -> any FaultEffect { Effect(direction: direction) }

    struct Effect: FaultEffect {
        let direction: Direction?
        mutating func applied<Chunk: ByteChunk>(to connection: inout ConnectionMachine<Chunk>, atAccept: Bool) -> EffectLifetime {
            let what = direction.map { $0 == .up ? "client → server" : "server → client" } ?? "either way"
            connection.fire("no byte and no close moves \(what) until the fault lifts; the connection stays open")
            return .stays
        }
        func holds(_ held: Direction) -> Bool { direction == nil || direction == held }
    }
}

extension FaultKind {
    public static func stall(_ direction: Direction? = nil) -> FaultKind { FaultKind(Stall(direction)) }
}
