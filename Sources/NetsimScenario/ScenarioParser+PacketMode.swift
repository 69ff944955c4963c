import NetsimCore
import NetsimLink

/// `link: { mode: packet }`: what a scenario may say when its link is a packet path, and the
/// clear error for each thing only the relay can do (or only a packet path can).
extension Validator {
    /// `mode:` of the scenario's link; the relay when absent.
    func readMode(_ map: Mapping) {
        guard let e = map["mode"] else { return }
        linkMode = choice(e, what: "link mode", options: LinkMode.allCases.map { ($0.rawValue, $0) }, normalize: { $0.lowercased() },
                          explanation: "relay (the default: a TCP relay, any platform) or packet (a network namespace; Linux, root)") ?? .relay
    }

    /// The packet-only keys of a `link:` mapping (or of its `up:`/`down:`); each is an error in
    /// relay mode and in a timeline step.
    func packetSettings(_ map: Mapping, step: Int?) -> PacketLinkSettings.DirectionSettings {
        var result = PacketLinkSettings.DirectionSettings()
        for key in PacketLinkSettings.keys {
            guard let e = map[key] else { continue }
            if step != nil {
                error(e.keyLocation, "'\(key)' is set once, in the scenario's 'link'; a timeline step changes the link's latency, rate and loss",
                      hint: "move '\(key)' to the top-level 'link'")
                continue
            }
            guard linkMode == .packet else {
                error(e.keyLocation, "'\(key)' acts on single packets, which the relay never sees (it carries a byte stream)",
                      hint: "add 'mode: packet' to 'link' (Linux, root; docs/packet.md)")
                continue
            }
            switch key {
            case "queue":
                result.queue = unit(e, expected: "a queue size") { try QueueLimit(parsing: $0) }
            case "duplicate": result.duplicate = probability(e)
            case "corrupt": result.corrupt = probability(e)
            default: result.reorder = probability(e)
            }
        }
        return result
    }

    /// What a packet link cannot do with the scenario's `link:` (read as `settings`).
    func checkPacketLink(_ map: Mapping, settings: LinkSettings, failed: Set<String>) {
        guard linkMode == .packet else { return }
        for key in ["slice", "slice_delay", "slice_variation"] {
            if let e = map[key] {
                error(e.keyLocation, "'\(key)' cuts the relay's writes; a packet link carries the kernel's own packets",
                      hint: "drop it, or use 'bandwidth' and 'latency'")
            }
        }
        if let e = map["tls"] {
            error(e.keyLocation, "'tls' chooses what the relay does with TLS; on a packet link the client talks to the upstream itself",
                  hint: "drop 'tls' from 'link' (give the upstream 'tls: true' for HTTPS)")
        }
        let link = settings.configuration()
        // Each problem once per entry: a both-ways `queue` with no rate either way is one error.
        // (A `guard … else { continue }` on the reorder skipped the queue's check: a queue with
        // no rate passed, and was ignored. QA 38.)
        func each(_ key: String, failsIn fails: (Direction) -> Bool, _ report: (Entry, String) -> Void) {
            let failing = Direction.allCases.filter(fails).compactMap { d in (map[key] ?? map[d.rawValue]).map { (d, $0) } }
            var reported: [SourceLocation] = []
            for (direction, entry) in failing where !reported.contains(entry.keyLocation) {
                reported.append(entry.keyLocation)
                let ways = failing.filter { $0.1.keyLocation == entry.keyLocation }.count
                report(entry, ways == 2 ? "either way" : direction.rawValue)
            }
        }
        each("reorder", failsIn: { d in
            (packetLink[d].reorder?.fraction ?? 0) > 0 && link[d].latency <= .zero && link[d].jitter <= .zero
        }) { e, way in
            error(e.keyLocation, "reordering \(way) needs a latency or jitter that way: a reordered packet overtakes others by skipping the delay",
                  hint: "add 'latency' (or 'jitter') to 'link'")
        }
        each("queue", failsIn: { d in link[d].bandwidth == nil && link[d].trace == nil && packetLink[d].queue != nil }) { e, way in
            error(e.keyLocation, "a queue forms only behind a rate limit, and the link has none \(way)",
                  hint: "add 'bandwidth' (or a 'trace') to 'link'")
        }
    }

    /// After the whole scenario is read: the upstream and checks a packet link cannot carry out,
    /// each at its place (its timeline's faults were checked as they were read; a `login` needs a
    /// `portal` fault, which a packet link refuses).
    func checkPacketMode(upstream: UpstreamSpec?, upstreamLocation: SourceLocation?, dns: ScenarioDNS?, expectations: [Expectation]) {
        guard linkMode == .packet else { return }
        let place = upstreamLocation ?? SourceLocation(file: file, line: 1, column: 1)
        switch upstream {
        case nil:
            break
        case .address(let endpoint):
            error(place, "the upstream \(endpoint) is not on the packet link: a client in the namespace reaches only the host side (NETSIM_HOST)",
                  hint: "use the built-in upstream ('routes:'), which listens there; for your own server use netsim shell (docs/packet.md)")
        case .replay:
            error(place, "a replayed upstream runs in relay mode only (it listens on loopback, which the namespace cannot reach)",
                  hint: "drop 'mode: packet', or describe the answers with 'routes:'")
        case .builtin(_, _, let wire) where wire.tls && (dns?.names.isEmpty ?? true):
            error(place, "an HTTPS upstream on a packet link needs a name for its certificate: the client would reach it by NETSIM_HOST's address",
                  hint: "add 'dns: { names: { api.test: host } }' (requests then go to https://api.test:PORT)")
        case .builtin:
            break
        }
        for expectation in expectations {
            for located in expectation.checks {
                switch located.check {
                case .bytes:
                    error(located.location, "'bytes' counts what the relay delivered; a packet link carries the kernel's packets and does not count a stream's bytes",
                          hint: "check what arrived with 'body: { sha256: … }' and how long it took with 'within'")
                case .httpRequests, .httpResponses:
                    let key = if case .httpRequests = located.check { "requests" } else { "responses" }
                    error(located.location, "'\(key)' counts the HTTP the relay observed; a packet link does not read HTTP",
                          hint: "count what the built-in server received with 'server: { count: … }'")
                default:
                    break
                }
            }
        }
    }
}
