import NetsimScenario
#if canImport(Glibc)
import NetsimPacket
#endif

extension Scenario {
    /// The link as the run applies it, for the run's header: on a packet link with its
    /// packet-only settings (queue, duplicate, corrupt, reorder) too. The header said only the
    /// relay's part, so `corrupt: 100%` showed as `unimpaired` (QA 38).
    public var appliedLinkDescription: String {
        #if canImport(Glibc)
        if linkMode == .packet { return PacketLinkConfiguration(link, packet: packetLink).description }
        #endif
        return link.description
    }
}
