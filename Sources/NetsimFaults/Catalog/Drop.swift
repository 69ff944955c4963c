import NetsimCore

/// `drop[=up|down]`: bytes in one direction (both without an argument) are discarded while the
/// connection stays open, those the link still held as it fires included; closes still pass.
/// The request reaches the server and the answer is lost (`drop=down`): what a retry must be
/// idempotent against. Unlike `stall`, nothing is held for later; and because the byte stream
/// now has a hole, the connection is closed (FIN both ways) when the fault lifts, as Toxiproxy
/// closes it when its `timeout` toxic is removed.
public struct Drop: Fault {
    public static let name = "drop"
    public static let syntax = "[=up|down]"
    public static let example = "drop=down"
    public static let scope = FaultScope.connection
    public static let summary = "one direction's bytes are discarded (closes pass); closed when lifted: request processed, answer lost"
    /// Toxiproxy's `timeout`: its stream's data is dropped, a close passes, and the connection
    /// closes after `timeout` ms (never if 0) or when the toxic is removed.
    public static let toxic: ToxicMapping? = ToxicMapping("timeout", origin: .toxiproxy, attributes: [.init("timeout", .milliseconds)]) {
        arguments throws(ToxicMapping.Invalid) in
        let timeout = arguments.milliseconds("timeout")
        return [.now(.drop(arguments.stream))] + (timeout == .zero ? [] : [.after(.fin, timeout)])
    }

    /// The direction whose bytes are dropped; nil: both.
    public var direction: Direction?
    public init(_ direction: Direction? = nil) { self.direction = direction }
    public init(argument: String?) throws(FaultArgumentError) {
        direction = try FaultArgumentError.direction(argument, for: Self.name, what: "a dropped direction")
    }
    public var argument: String? { direction?.rawValue }

    public func makeEffect() -> any FaultEffect { Effect(direction: direction) }

    struct Effect: FaultEffect {
        let direction: Direction?
        /// Bytes discarded so far, for the close's reason.
        var dropped = 0
        var inspectsBytes: Bool { true }

        mutating func applied<Chunk: ByteChunk>(to connection: inout ConnectionMachine<Chunk>, atAccept: Bool) -> EffectLifetime {
            let what = direction.map { $0 == .up ? "client → server" : "server → client" } ?? "either way"
            connection.fire("bytes \(what) are discarded until the fault lifts (closes pass); then the connection closes")
            // What the link still held is lost too: on a slow link the relay may hold seconds of
            // an answer, which went on arriving for the whole window (QA 55).
            for held in Direction.allCases where direction == nil || direction == held {
                dropped += connection.discardQueuedBytes(held)
            }
            return .stays
        }

        mutating func bytes<Chunk: ByteChunk>(_ chunk: Chunk, _ direction: Direction, on connection: inout ConnectionMachine<Chunk>) -> ByteVerdict {
            guard self.direction == nil || self.direction == direction else { return .pass }
            dropped += chunk.count
            return .swallow
        }

        /// Closed either way, as Toxiproxy's `timeout` does when it is removed; the reason says
        /// whether the stream has a hole (it said so of a connection that had sent nothing).
        mutating func lifted<Chunk: ByteChunk>(from connection: inout ConnectionMachine<Chunk>) {
            let why = dropped > 0 ? "the byte stream lost \(dropped) bytes while dropped" : "nothing was dropped, but the fault closes its connections as it lifts (Toxiproxy's timeout does)"
            connection.closeGracefully(detail: "\(why): closed as the fault lifts")
        }
    }
}

extension FaultKind {
    public static func drop(_ direction: Direction? = nil) -> FaultKind { FaultKind(Drop(direction)) }
}
