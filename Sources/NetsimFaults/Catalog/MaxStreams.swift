import NetsimCore

/// `max-streams=N`: SETTINGS_MAX_CONCURRENT_STREAMS lowered to N on h2 connections (open ones
/// get a new SETTINGS frame), as an overloaded server does: a client that opens more streams at
/// once has the extra ones refused (REFUSED_STREAM). Lifting restores 100.
///
/// Acts on h2 connections seen through TLS interception (the relay's HTTP/2 layer).
public struct MaxStreams: Fault {
    public static let name = "max-streams"
    public static let syntax = "=N"
    public static let example = "max-streams=1"
    public static let scope = FaultScope.request
    public static let summary = "h2: SETTINGS_MAX_CONCURRENT_STREAMS lowered to N; extra streams are refused (REFUSED_STREAM), also those a client opened before the SETTINGS reached it"

    /// What a lifted fault restores (NIOHTTP2's default).
    public static let normal = 100

    public var limit: Int
    public init(_ limit: Int) { self.limit = limit }
    public init(argument: String?) throws(FaultArgumentError) {
        let text = try FaultArgumentError.required(argument, for: Self.name)
        // The SETTINGS frame carries it in 32 bits (RFC 9113 §6.5.1).
        guard let limit = Int(text), (0...Int(UInt32.max)).contains(limit) else {
            throw FaultArgumentError("a stream count (max-streams=N, 0 ≤ N ≤ 4294967295)")
        }
        self.limit = limit
    }
    public var argument: String? { String(limit) }

    public func makeEffect() -> any FaultEffect { HTTP2OnlyEffect(name: Self.name) }
}

extension FaultKind {
    public static func maxStreams(_ limit: Int) -> FaultKind { FaultKind(MaxStreams(limit)) }
}
