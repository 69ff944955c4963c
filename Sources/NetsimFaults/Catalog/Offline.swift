import NetsimCore

/// `offline`: airplane mode, or walking out of Wi-Fi range. The namespace's interface goes down:
/// a new connect fails at once with ENETUNREACH (no route), open connections hear nothing (their
/// retransmissions go nowhere) and carry on when the interface comes back. Packet path only.
public struct Offline: Fault {
    public static let name = "offline"
    public static let scope = FaultScope.connection
    public static let paths = FaultPaths.packet
    public static let summary = "connect fails at once with ENETUNREACH; open connections hear nothing until it lifts, then continue"

    public init() {}
    public init(argument: String?) throws(FaultArgumentError) { try FaultArgumentError.none(argument, for: Self.name) }

    public func makeEffect() -> any FaultEffect { PacketOnlyEffect(name: Self.name) }
}

extension FaultKind {
    public static var offline: FaultKind { FaultKind(Offline()) }
}
