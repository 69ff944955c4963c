import NetsimCore

/// `idle-close=DURATION`: a connection silent for this long is closed with FIN — a server's
/// or a load balancer's keep-alive timeout.
public struct IdleClose: Fault {
    public static let name = "idle-close"
    public static let syntax = "=DURATION"
    public static let example = "idle-close=5s"
    public static let scope = FaultScope.connection
    public static let summary = "a connection idle for DURATION gets a FIN, as from a keep-alive timeout"
    public static let toxic: ToxicMapping? = ToxicMapping("idle_close", origin: .netsim, attributes: [.init("timeout", .milliseconds)]) {
        arguments throws(ToxicMapping.Invalid) in
        let timeout = arguments.milliseconds("timeout")
        guard timeout > .zero else { throw ToxicMapping.Invalid("attribute timeout of idle_close must be at least 1 (milliseconds)") }
        return [.now(.idleClose(timeout))]
    }

    public var limit: Duration
    public init(_ limit: Duration) { self.limit = limit }
    public init(argument: String?) throws(FaultArgumentError) {
        limit = try FaultArgumentError.unit(argument, for: Self.name) { try Duration(parsing: $0) }
        // 0 closed every connection about 1 ms after it opened; the toxic already refused it.
        guard limit > .zero else { throw FaultArgumentError("a duration longer than 0 (\(Self.name)=0 would close every connection at once)") }
    }
    public var argument: String? { limit.compactDescription }

    public func makeEffect() -> any FaultEffect { Effect(limit: limit.nanoseconds) }

    struct Effect: FaultEffect {
        let limit: Int64
        mutating func applied<Chunk: ByteChunk>(to connection: inout ConnectionMachine<Chunk>, atAccept: Bool) -> EffectLifetime {
            connection.fire("closes after \(formatNanoseconds(limit)) of silence")
            connection.armFaultTimer(at: connection.lastActivityTime + limit)
            return .stays
        }

        mutating func timerFired<Chunk: ByteChunk>(on connection: inout ConnectionMachine<Chunk>) {
            let silent = connection.now - connection.lastActivityTime
            if silent >= limit {
                connection.closeGracefully(detail: "silent for \(formatNanoseconds(silent))")
            } else {
                connection.armFaultTimer(at: connection.lastActivityTime + limit)
            }
        }
    }
}

extension FaultKind {
    public static func idleClose(_ limit: Duration) -> FaultKind { FaultKind(IdleClose(limit)) }
}
