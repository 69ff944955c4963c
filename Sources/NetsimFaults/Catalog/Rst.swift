import NetsimCore

/// `rst`: both legs are reset now. `rst=down` (or `up`) waits for the next bytes travelling that
/// way instead, drops them, and resets then (`rst=down,500ms`: that long after them): the
/// request reaches the server and its answer is met with ECONNRESET, the case a non-idempotent
/// retry must survive. That is Toxiproxy's `reset_peer` on its stream.
public struct Rst: Fault {
    public static let name = "rst"
    public static let syntax = "[=up|down[,DURATION]]"
    public static let example = "rst=down"
    public static let scope = FaultScope.connection
    public static let summary = "open connections are reset: ECONNRESET on the next read or write (rst=down: when the answer comes)"
    /// Toxiproxy's `reset_peer`: on the first bytes of its stream, a reset, `timeout` ms later.
    public static let toxic: ToxicMapping? = ToxicMapping("reset_peer", origin: .toxiproxy, attributes: [.init("timeout", .milliseconds)]) {
        arguments throws(ToxicMapping.Invalid) in
        [.now(.rst(on: arguments.stream, after: arguments.milliseconds("timeout")))]
    }

    /// The direction whose next bytes trigger the reset; nil: reset now.
    public var direction: Direction?
    /// How long after those bytes.
    public var delay: Duration

    public init(on direction: Direction? = nil, after delay: Duration = .zero) {
        self.direction = direction
        self.delay = direction == nil ? .zero : delay
    }
    public init(argument: String?) throws(FaultArgumentError) {
        guard let argument else {
            self.init()
            return
        }
        // Empty parts kept: `rst=` crashed (no first part), `rst=down,` passed as `rst=down`.
        let parts = argument.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        let direction = try FaultArgumentError.direction(parts[0], for: Self.name, what: "the direction whose bytes trigger the reset")
        if parts.count > 1, parts[1].isEmpty { throw FaultArgumentError("a delay after the comma (\(Self.name)=\(parts[0]),500ms)") }
        let delay = parts.count > 1 ? try FaultArgumentError.unit(parts[1], for: Self.name) { try Duration(parsing: $0) } : .zero
        self.init(on: direction, after: delay)
    }
    public var argument: String? {
        direction.map { $0.rawValue + (delay == .zero ? "" : ",\(delay.compactDescription)") }
    }

    public func makeEffect() -> any FaultEffect { Effect(direction: direction, delay: delay) }

    struct Effect: FaultEffect {
        let direction: Direction?
        let delay: Duration
        var triggered = false
        var inspectsBytes: Bool { direction != nil }

        mutating func applied<Chunk: ByteChunk>(to connection: inout ConnectionMachine<Chunk>, atAccept: Bool) -> EffectLifetime {
            guard let direction else {
                connection.resetBoth(detail: "reset both legs")
                return .done
            }
            let which = direction == .down ? "the server's next bytes" : "the client's next bytes"
            connection.fire("\(which) are dropped and the connection reset\(delay == .zero ? "" : " \(delay.compactDescription) later")")
            return .stays
        }

        mutating func bytes<Chunk: ByteChunk>(_ chunk: Chunk, _ travelling: Direction, on connection: inout ConnectionMachine<Chunk>) -> ByteVerdict {
            guard travelling == direction else { return .pass }
            if triggered { return .swallow }
            triggered = true
            let detail = "reset when \(chunk.count) bytes came \(travelling == .down ? "from the server" : "from the client") (dropped)"
            if delay == .zero { return .replace(with: [], then: .init(.rst, detail)) }
            connection.armFaultTimer(at: connection.now + delay.nanoseconds)
            return .swallow
        }

        mutating func timerFired<Chunk: ByteChunk>(on connection: inout ConnectionMachine<Chunk>) {
            connection.resetBoth(detail: "reset \(delay.compactDescription) after bytes came \(direction == .down ? "from the server" : "from the client") (dropped)")
        }
    }
}

extension FaultKind {
    public static var rst: FaultKind { FaultKind(Rst()) }
    /// Reset on the next bytes travelling `direction` (nil: now), `delay` after them.
    public static func rst(on direction: Direction?, after delay: Duration = .zero) -> FaultKind { FaultKind(Rst(on: direction, after: delay)) }
}
