import NetsimCore

/// `rst`: both legs are reset now.
public struct Rst: Fault {
    public static let name = "rst"
    public static let scope = FaultScope.connection
    public static let summary = "open connections are reset: ECONNRESET on the next read or write"
    /// Toxiproxy's `reset_peer`: a reset now, or `timeout` ms after each connection opened.
    public static let toxic: ToxicMapping? = ToxicMapping("reset_peer", origin: .toxiproxy, attributes: [.init("timeout", .milliseconds)]) {
        arguments throws(ToxicMapping.Invalid) in
        let timeout = arguments.milliseconds("timeout")
        return [timeout == .zero ? .now(.rst) : .after(.rst, timeout)]
    }

    public init() {}
    public init(argument: String?) throws(FaultArgumentError) { try FaultArgumentError.none(argument, for: Self.name) }

    public func makeEffect() -> any FaultEffect { Effect() }

    struct Effect: FaultEffect {
        mutating func applied<Chunk: ByteChunk>(to connection: inout ConnectionMachine<Chunk>, atAccept: Bool) -> EffectLifetime {
            connection.resetBoth(detail: "reset both legs")
            return .done
        }
    }
}

extension FaultKind {
    public static var rst: FaultKind { FaultKind(Rst()) }
}
