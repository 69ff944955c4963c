import Foundation
import NIOCore
import NIOPosix
import NetsimCore
import NetsimLink
import NetsimRelay

/// The relays behind the API's proxies: starting, stopping, and turning toxics into fault rules
/// and link models on them.
extension ToxiproxyAPI {
    // MARK: Relays

    func startRelay(_ entry: ProxyEntry) async throws {
        let upstream = try parseEndpoint(entry.upstream, field: "upstream")
        let log = EventLog(retention: 0)
        log.addSink(entry.metrics)
        if let eventSink { log.addSink(eventSink) }
        if let eventLines {
            log.rebase(toMonotonic: eventOrigin)
            log.addSink(ProxyEventLines(proxy: entry.name, lines: eventLines))
        }
        // Resolved once now when it can be; a name that does not resolve yet (a compose service
        // not up, `/populate` run first) is looked up per connection, as Toxiproxy does, and the
        // proxy is created. Before, it was a 500 that blamed the listen address.
        let connector: (any UpstreamConnector)? = (try? AddressConnector(resolving: upstream)) ?? HostConnector(upstream)
        let relay = Relay(
            configuration: RelayConfiguration(listen: entry.listen, upstream: upstream, seed: seed, delays: entry.metrics,
                                              simulatesHandshake: false),  // Toxiproxy's timings
            eventLog: log, group: group, connector: connector, numbering: numbering)
        // The toxics' link before the listener (re-enabled, the proxy keeps them): logged as it
        // starts, and toxics with a toxicity below 1 chosen per connection, as when added.
        await applyLink(of: entry.toxics, to: relay)
        let bound: Endpoint
        do {
            bound = try await relay.start()
        } catch {
            await relay.stop()
            throw APIError(500, "cannot listen on \(entry.listen) for proxy \(entry.name): \(SocketFailureText.describe(error))")
        }
        if !bound.isLoopback {
            warn("proxy \(entry.name) listens on \(bound), which is NOT a loopback address: other machines can reach \(entry.upstream) through it.", true)
        }
        entry.listen = bound
        entry.relay = relay
        entry.faultIDs.removeAll()
        for toxic in entry.toxics { try await addFaults(of: toxic, to: entry) }
    }

    /// Toxiproxy's disable: stop accepting and close every connection.
    func stopRelay(_ entry: ProxyEntry) async {
        guard let relay = entry.relay else { return }
        entry.relay = nil
        entry.faultIDs.removeAll()
        await relay.stop()
        relay.eventLog.flush()  // its last events (`listener_closed`) written now, not lost with it
    }

    func addFaults(of toxic: Toxic, to entry: ProxyEntry) async throws {
        guard let relay = entry.relay else { return }
        var ids: [FaultID] = []
        for rule in toxic.faultRules() { ids.append(try await relay.addFault(rule)) }
        entry.faultIDs[toxic.name] = ids
    }

    func removeFaults(of toxic: Toxic, from entry: ProxyEntry) async {
        guard let relay = entry.relay, let ids = entry.faultIDs.removeValue(forKey: toxic.name) else { return }
        for id in ids { await relay.removeFault(id) }
    }

    /// Link toxics with toxicity 1 act on every connection; one with a lower toxicity acts on
    /// each connection with that probability, decided from the relay's seed, the toxic's name
    /// and the connection (so the same connection always gets the same answer).
    func applyLink(_ entry: ProxyEntry) async {
        guard let relay = entry.relay else { return }
        await applyLink(of: entry.toxics, to: relay)
    }

    private func applyLink(of toxics: [Toxic], to relay: Relay) async {
        let toxics = toxics.filter { $0.isLinkToxic && $0.toxicity > 0 }
        if toxics.allSatisfy({ $0.toxicity >= 1 }) { return await relay.useOneLink(Toxic.link(of: toxics)) }
        let seed = relay.configuration.seed
        await relay.setLinkChooser { connection in
            Toxic.link(of: toxics.filter { toxic in
                var random = SeededRandom(seed: seed).derived(SeededRandom.label("toxic " + toxic.name), connection.raw)
                return random.chance(toxic.toxicity)
            })
        }
    }

    // MARK: Toxics

    func addToxic(_ entry: ProxyEntry, _ toxic: Toxic) async throws -> Toxic {
        guard !entry.toxics.contains(where: { $0.name == toxic.name }) else { throw APIError(409, "toxic already exists") }
        entry.toxics.append(toxic)
        await applyLink(entry)
        try await addFaults(of: toxic, to: entry)
        return toxic
    }

    func replaceToxic(_ entry: ProxyEntry, at index: Int, with toxic: Toxic) async throws {
        let old = entry.toxics[index]
        entry.toxics[index] = toxic
        await applyLink(entry)
        guard toxic.isStandIn, let relay = entry.relay else {
            await removeFaults(of: old, from: entry)
            try await addFaults(of: toxic, to: entry)
            return
        }
        // An outage or portal changed in place: the new one is added before the old one goes,
        // so a connection it still covers is never let through to the upstream in between.
        // (Other faults cannot overlap like that: the old limit's removal would clear the new one.)
        let oldIDs = entry.faultIDs.removeValue(forKey: old.name) ?? []
        try await addFaults(of: toxic, to: entry)
        for id in oldIDs { await relay.removeFault(id) }
    }

    func removeToxic(_ entry: ProxyEntry, at index: Int) async throws {
        let toxic = entry.toxics.remove(at: index)
        await removeFaults(of: toxic, from: entry)
        await applyLink(entry)
    }

    // MARK: Metrics

    func metrics() -> APIResponse {
        APIResponse(status: 200, contentType: MetricsRegistry.contentType, body: Array(metricsRegistry.exposition().utf8))
    }
}

/// Lets one request at a time through, in arrival order.
actor SerialGate {
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func enter() async {
        if !busy {
            busy = true
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    func leave() {
        if waiters.isEmpty {
            busy = false
        } else {
            waiters.removeFirst().resume()
        }
    }
}
