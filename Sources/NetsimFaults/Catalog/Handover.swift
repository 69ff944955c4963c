import NetsimCore

/// `handover`: Wi-Fi to cellular. The client's address changes: every connection open on the
/// old address dies (its sockets are destroyed, as Android's netd does when an address goes
/// away: ECONNABORTED; the host side's are reset), new connections leave from the new address.
/// Packet path only; instantaneous (a duration means nothing).
public struct Handover: Fault {
    public static let name = "handover"
    public static let scope = FaultScope.connection
    public static let paths = FaultPaths.packet
    public static let summary = "the client's address changes: open connections die (ECONNABORTED), new ones work"

    public init() {}
    public init(argument: String?) throws(FaultArgumentError) { try FaultArgumentError.none(argument, for: Self.name) }

    public func makeEffect() -> any FaultEffect { PacketOnlyEffect(name: Self.name) }
}

extension FaultKind {
    public static var handover: FaultKind { FaultKind(Handover()) }
}
