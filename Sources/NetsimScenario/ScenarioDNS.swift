import NetsimCore

/// A scenario's `dns:` block: the names netsim's resolver answers and how it misbehaves, meaning
/// what `netsim shell --dns/--dns-delay/--dns-fail` mean.
///
/// ```yaml
/// dns:
///   names: { api.test: host }   # NAME: host (NETSIM_HOST) or NETSIM_HOST's address
///   delay: 3s
///   fail: servfail              # nxdomain | servfail | timeout
/// ```
///
/// It needs a resolver the client really uses: a packet-mode link (the namespace's resolv.conf
/// points at netsim) or the forward proxy (its own lookups). The relay resolves nothing for the
/// client, so in relay mode the validator refuses the block with that reason.
public struct ScenarioDNS: Equatable, Sendable {
    public var names: [DNSMapping]
    public var faults: DNSFaults
    /// Where `dns:` is written (what a mode error points at).
    public var location: SourceLocation

    public init(names: [DNSMapping] = [], faults: DNSFaults = .none, location: SourceLocation) {
        self.names = names
        self.faults = faults
        self.location = location
    }
}

extension Validator {
    static let dnsKeys = ["names", "delay", "fail"]
    /// What the `dns:` block and a DNS-delaying profile need, for every error that says so.
    static let dnsNeedsResolver = "dns: needs link mode packet or the forward proxy"
    static let dnsNeedsResolverHint = "the relay resolves nothing for the client: add 'mode: packet' to 'link' (Linux, root; docs/packet.md), or use `netsim proxy --dns-delay/--dns-fail`"

    /// Reads `dns:` completely (every problem reported with its position); then, when the
    /// scenario's link cannot apply it (`packetMode` false: the relay), says so at `dns:`.
    func dns(_ entry: Entry, packetMode: Bool) -> ScenarioDNS? {
        guard let map = mapping(entry) else { return nil }
        let errorsBefore = errorCount
        rejectUnknownKeys(map, allowed: Self.dnsKeys)
        var result = ScenarioDNS(location: entry.keyLocation)
        if let names = map["names"], let pairs = stringPairs(names, what: "name") {
            for pair in pairs {
                do {
                    result.names.append(try DNSMapping(name: pair.key, value: pair.value))
                } catch {
                    self.error(pair.location, "names: \(error)", hint: "write `\(pair.key): host`: the packet path delivers only to NETSIM_HOST")
                }
            }
        }
        if let delay = map["delay"].flatMap(duration) { result.faults.delay = delay }
        if let fail = map["fail"] {
            result.faults.failure = choice(fail, what: "DNS failure", options: DNSFailure.allCases.map { ($0.rawValue, $0) }, normalize: { $0.lowercased() })
        }
        // Refused after its values are checked, whether or not they were right: every problem at once.
        if !packetMode {
            error(entry.keyLocation, Self.dnsNeedsResolver, hint: Self.dnsNeedsResolverHint)
            return nil
        }
        guard errorCount == errorsBefore else { return nil }
        return result
    }
}
