import NetsimCore

/// `udp-block[=PORT]`: UDP is dropped both ways (only to or from PORT on the host side when
/// given: `udp-block=443` blocks QUIC and leaves DNS alone); TCP passes. How a network that
/// filters UDP looks to an app that must fall back from HTTP/3. Packet path only.
public struct UDPBlock: Fault {
    public static let name = "udp-block"
    public static let syntax = "[=PORT]"
    public static let example = "udp-block=443"
    public static let scope = FaultScope.connection
    public static let paths = FaultPaths.packet
    public static let summary = "UDP datagrams vanish (all, or to/from one host port); TCP passes"

    /// The host side's port whose datagrams vanish; nil: every datagram.
    public var port: UInt16?
    public init(port: UInt16? = nil) { self.port = port }
    public init(argument: String?) throws(FaultArgumentError) {
        guard let argument else { return }
        guard let port = UInt16(argument), port > 0 else { throw FaultArgumentError("a UDP port (udp-block=443)") }
        self.port = port
    }
    public var argument: String? { port.map(String.init) }

    public func makeEffect() -> any FaultEffect { PacketOnlyEffect(name: Self.name) }
}

extension FaultKind {
    public static func udpBlock(port: UInt16? = nil) -> FaultKind { FaultKind(UDPBlock(port: port)) }
}
