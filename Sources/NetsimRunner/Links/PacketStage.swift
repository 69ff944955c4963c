import NetsimCore
import NetsimScenario

/// A run's packet link as the runner sees it on every platform: none in relay mode; on Linux a
/// ``PacketRunLink``; elsewhere link mode packet is a clear error (network namespaces are Linux's).
struct PacketStage: Sendable {
    #if canImport(Glibc)
    private let packet: PacketRunLink
    #endif
    /// NETSIM_HOST: where the upstream listens.
    let host: String
    /// Where the client runs: inside the namespace.
    let placement: ClientPlacement

    /// The packet link `scenario` asks for, set up; nil in relay mode.
    static func start(_ scenario: Scenario, seed: UInt64, log: EventLog, pcapPath: String?) throws -> PacketStage? {
        guard scenario.linkMode == .packet else { return nil }
        #if canImport(Glibc)
        let packet = try PacketRunLink(scenario, seed: seed, log: log, pcapPath: pcapPath)
        let (prefix, environment): ([String], [String: String])
        do { (prefix, environment) = try packet.placing([]) } catch {
            packet.stop()
            throw error
        }
        return PacketStage(packet: packet, host: packet.host, placement: ClientPlacement(prefix: prefix, environment: environment))
        #else
        throw RunnerError.invalid("\(scenario.file): link mode packet needs Linux (network namespaces and TUN devices; docs/packet.md)")
        #endif
    }

    /// What the timeline's fault and link steps act on.
    var link: any RunLink {
        #if canImport(Glibc)
        packet
        #else
        fatalError("no packet link without Linux")
        #endif
    }

    func authority(port: Int) -> String {
        #if canImport(Glibc)
        packet.authority(port: port)
        #else
        "\(host):\(port)"
        #endif
    }

    func stop() {
        #if canImport(Glibc)
        packet.stop()
        #endif
    }
}
