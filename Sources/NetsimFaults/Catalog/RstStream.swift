import NetsimCore

/// `rst-stream[=refused|internal|cancel]`: the next request's stream on each h2 connection is
/// reset. `refused` (the default): REFUSED_STREAM before the server sees it — nothing was
/// processed, a retry is safe. `internal`: INTERNAL_ERROR after the server processed it, so the
/// client cannot know whether it took effect: a POST must not be replayed blindly. `cancel`:
/// CANCEL, also after the server processed it.
///
/// Acts on h2 connections seen through TLS interception (the relay's HTTP/2 layer).
public struct RstStream: Fault {
    public static let name = "rst-stream"
    public static let syntax = "[=refused|internal|cancel]"
    public static let example = "rst-stream=internal"
    public static let scope = FaultScope.request
    public static let summary = "h2: the next request's stream is reset: refused (not processed) or internal/cancel (processed)"

    public enum Code: String, Sendable, CaseIterable {
        case refused, `internal`, cancel
        /// Whether the server processes the request before the reset.
        public var reachesServer: Bool { self != .refused }
    }

    public var code: Code
    public init(_ code: Code = .refused) { self.code = code }
    public init(argument: String?) throws(FaultArgumentError) {
        guard let code = Code(rawValue: argument ?? Code.refused.rawValue) else {
            throw FaultArgumentError("a reset code (rst-stream, rst-stream=refused, rst-stream=internal or rst-stream=cancel)")
        }
        self.code = code
    }
    public var argument: String? { code == .refused ? nil : code.rawValue }

    public func makeEffect() -> any FaultEffect { HTTP2OnlyEffect(name: Self.name) }
}

extension FaultKind {
    public static func rstStream(_ code: RstStream.Code = .refused) -> FaultKind { FaultKind(RstStream(code)) }
}
