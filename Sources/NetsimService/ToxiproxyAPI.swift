import Foundation
import NIOCore
import NIOPosix
import NetsimCore
import NetsimLink
import NetsimRelay

/// Who may use the API.
public struct APIAccess: Sendable {
    /// Required as `Authorization: Bearer TOKEN` on every request when set.
    public var token: String?
    public init(token: String? = nil) { self.token = token }
}

/// Toxiproxy's REST API over netsim relays: each proxy is a ``Relay``; toxics become link models and
/// fault rules on it. Requests are handled one at a time, in arrival order.
// `@unchecked Sendable`: mutable state is touched only inside `gate`, which admits one request at a time.
public final class ToxiproxyAPI: APIResponder, @unchecked Sendable {
    public static let version = "netsim-0.1.0 (toxiproxy API 2)"

    final class ProxyEntry {
        var name: String
        var listen: Endpoint
        var upstream: String
        var enabled: Bool
        var toxics: [Toxic] = []
        var relay: Relay?
        var faultIDs: [String: [FaultID]] = [:]
        let metrics: ProxyMetrics

        init(name: String, listen: Endpoint, upstream: String, enabled: Bool, metrics: ProxyMetrics) {
            self.metrics = metrics
            self.name = name
            self.listen = listen
            self.upstream = upstream
            self.enabled = enabled
        }

        var json: ProxyJSON {
            ProxyJSON(name: name, listen: listen.description, upstream: upstream, enabled: enabled, toxics: toxics.map(ToxicJSON.init))
        }
    }

    public let access: APIAccess
    /// This API's own metrics (`GET /metrics`); never the process-global swift-metrics system.
    public let metricsRegistry = MetricsRegistry()
    /// Sees every proxy's relay events (all proxies together) besides the metrics.
    let eventSink: (any EventSink)?
    /// `netsim serve --events`: every proxy's events as JSON lines, each naming its proxy.
    let eventLines: JSONLinesEventSink?
    /// Where the times in ``eventLines`` start: the API's creation (monotonic nanoseconds).
    let eventOrigin = SystemClock().now()
    /// Seeds every proxy's relay: toxicity, jitter, loss, slicer sizes (`netsim serve --seed`).
    let seed: UInt64
    /// One numbering of connections for every proxy, for the life of the API: a proxy disabled
    /// and enabled, or deleted and made again, starts a new relay (QA 67: `conn 1` three times
    /// for one proxy in one file).
    let numbering = ConnectionNumbering()
    let group: MultiThreadedEventLoopGroup
    private let gate = SerialGate()
    // Touched only while holding `gate`.
    var proxies: [String: ProxyEntry] = [:]
    private var order: [String] = []

    /// - Parameters:
    ///   - eventSink: also receives the events of every proxy's relay, as they happen (a test
    ///     waits on it for a connection to close instead of polling `/metrics`).
    ///   - eventLines: also writes every proxy's events, each line with `"proxy":NAME` and its
    ///     time from the API's start, so lines of different proxies compare (the file is in each
    ///     proxy's order; ``flushEvents()`` writes what is pending, a stopped proxy's events are
    ///     written as it stops).
    /// Told what a person must know at once: a proxy that listens beyond loopback (`exposes`:
    /// `netsim serve` prints it framed on standard error), or a `:PORT` listen taken as loopback.
    let warn: @Sendable (_ message: String, _ exposes: Bool) -> Void

    public init(access: APIAccess = APIAccess(), threads: Int = System.coreCount, eventSink: (any EventSink)? = nil,
                eventLines: JSONLinesEventSink? = nil, seed: UInt64 = 1,
                warn: @escaping @Sendable (_ message: String, _ exposes: Bool) -> Void = { _, _ in }) {
        self.access = access
        self.eventSink = eventSink
        self.eventLines = eventLines
        self.seed = seed
        // The seed first, once for every proxy, at time 0 (as `netsim relay` begins its log).
        eventLines?.receive(line: Event(time: 0, connection: nil, kind: .seed(seed)).jsonLine)
        self.warn = warn
        self.group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, threads))
    }

    /// Stops every proxy and the relays' event loops.
    public func shutdown() async {
        await gate.enter()
        for entry in proxies.values {
            await stopRelay(entry)
            entry.metrics.destroy()
        }
        proxies.removeAll()
        order.removeAll()
        await gate.leave()
        try? await group.shutdownGracefully()
    }

    /// Writes the events every running proxy has recorded so far to ``eventLines`` (`netsim
    /// serve` calls it every second, so `tail -f` follows and a hard kill loses at most that).
    public func flushEvents() async {
        guard eventLines != nil else { return }
        await gate.enter()
        for entry in proxies.values { entry.relay?.eventLog.flush() }
        await gate.leave()
        eventLines?.flush()
    }

    // MARK: Entry point

    public func handle(_ request: APIRequest) async -> APIResponse {
        if let refusal = screen(request) { return .error(refusal) }
        await gate.enter()
        let response: APIResponse
        do {
            response = try await route(request)
        } catch let error as APIError {
            response = .error(error)
        } catch {
            response = .error(APIError(500, "\(error)"))
        }
        await gate.leave()
        return response
    }

    /// Browser-originated requests and missing tokens are refused before anything else.
    func screen(_ request: APIRequest) -> APIError? {
        if let agent = request.header("User-Agent"), agent.hasPrefix("Mozilla/") {
            return APIError(403, "User agent not allowed: the netsim API refuses requests from browsers")
        }
        if request.header("Origin") != nil {
            return APIError(403, "Origin not allowed: the netsim API refuses requests from browsers")
        }
        if let token = access.token {
            // The scheme is case-insensitive (RFC 9110 11.1): `bearer TOKEN` is the same.
            let given = request.header("Authorization")?.split(separator: " ", maxSplits: 1)
            guard let given, given.count == 2, given[0].lowercased() == "bearer", given[1].trimmingCharacters(in: .whitespaces) == token else {
                return APIError(401, "missing or wrong token: send the header Authorization: Bearer TOKEN")
            }
        }
        return nil
    }

    private func route(_ request: APIRequest) async throws -> APIResponse {
        let path = request.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? "/"
        let parts = path.split(separator: "/").map { String($0).removingPercentEncoding ?? String($0) }
        let method = request.method
        func notAllowed() -> APIError { APIError(405, "method \(method) not allowed on \(path)") }

        switch parts.count {
        case 0:
            throw APIError(404, "not found: \(path)")
        case 1:
            switch (parts[0], method) {
            case ("version", "GET"): return .json(200, VersionJSON(version: Self.version))
            case ("metrics", "GET"): return metrics()
            case ("reset", "POST"): try await reset(); return .noContent
            case ("populate", "POST"):
                return try await populate(request.array(of: RequestField<ProxyRequest>.self, otherwise: "populate takes a JSON array of proxies"))
            case ("proxies", "GET"): return .json(200, proxies.mapValues(\.json))
            case ("proxies", "POST"): return .json(201, try await create(request.object(ProxyRequest.self)).json)
            case ("version", _), ("metrics", _), ("reset", _), ("populate", _), ("proxies", _): throw notAllowed()
            default: throw APIError(404, "not found: \(path)")
            }
        case 2 where parts[0] == "proxies":
            let entry = try proxy(parts[1])
            switch method {
            case "GET": return .json(200, entry.json)
            case "POST", "PATCH": try await update(entry, request.object(ProxyRequest.self)); return .json(200, entry.json)
            case "DELETE": try await delete(entry); return .noContent
            default: throw notAllowed()
            }
        case 3 where parts[0] == "proxies" && parts[2] == "toxics":
            let entry = try proxy(parts[1])
            switch method {
            case "GET": return .json(200, entry.toxics.map(ToxicJSON.init))
            case "POST": return .json(200, ToxicJSON(try await addToxic(entry, request.object(ToxicRequest.self).newToxic())))
            default: throw notAllowed()
            }
        case 4 where parts[0] == "proxies" && parts[2] == "toxics":
            let entry = try proxy(parts[1])
            guard let index = entry.toxics.firstIndex(where: { $0.name == parts[3] }) else {
                throw APIError(404, "toxic not found")
            }
            switch method {
            case "GET": return .json(200, ToxicJSON(entry.toxics[index]))
            case "POST", "PATCH":
                var toxic = entry.toxics[index]
                try request.object(ToxicRequest.self).update(&toxic)
                try await replaceToxic(entry, at: index, with: toxic)
                return .json(200, ToxicJSON(toxic))
            case "DELETE":
                try await removeToxic(entry, at: index)
                return .noContent
            default: throw notAllowed()
            }
        default:
            throw APIError(404, "not found: \(path)")
        }
    }

    /// The relay behind proxy `name` while it is enabled (tests ask it which link a connection
    /// gets rather than timing bytes).
    func relay(ofProxy name: String) async -> Relay? {
        await gate.enter()
        let relay = proxies[name]?.relay
        await gate.leave()
        return relay
    }

    private func proxy(_ name: String) throws -> ProxyEntry {
        guard let entry = proxies[name] else { throw APIError(404, "proxy not found") }
        return entry
    }

    // MARK: Proxies

    private struct ProxyFields {
        var name: String
        var listen: Endpoint
        var upstream: String
        var enabled: Bool
    }

    /// A new proxy's fields: name and upstream required, listen on a free loopback port unless
    /// given, enabled unless told.
    private func fields(_ request: ProxyRequest) throws -> ProxyFields {
        try request.checkTypes()
        guard let name = request.name else { throw APIError.badRequest("missing required field: name") }
        // A name is a metrics label and a path segment: a control character in it reached
        // /metrics raw (QA 59: a NUL).
        if let bad = name.unicodeScalars.first(where: { $0.properties.generalCategory == .control }) {
            throw APIError.badRequest("name must not hold control characters (U+\(String(format: "%04X", bad.value)))")
        }
        guard let upstream = request.upstream else { throw APIError.badRequest("missing required field: upstream") }
        try checkUpstream(upstream)
        let listen = try parseEndpoint(request.listen ?? "127.0.0.1:0", field: "listen")
        return ProxyFields(name: name, listen: listen, upstream: upstream, enabled: try request.enabled(otherwise: true))
    }

    /// An upstream is HOST:PORT with a port a server can have: port 0 was taken, and every
    /// connection through the proxy was then reset (`netsim relay --upstream` refuses it too).
    private func checkUpstream(_ text: String) throws {
        if try parseEndpoint(text, field: "upstream").port == 0 {
            throw APIError.badRequest("upstream needs the server's port (1-65535), not \(text): port 0 is no server's")
        }
    }

    /// `listen: ":PORT"`, which Toxiproxy takes for every address, is loopback here: said, since
    /// a docker-compose setup that relies on it cannot reach the proxy (QA 59).
    private func noteLoopbackOnly(_ entry: ProxyEntry, asked: String?) {
        guard let asked, asked.hasPrefix(":") else { return }
        warn("proxy \(entry.name): listen \(asked) is taken as 127.0.0.1\(asked), loopback only (Toxiproxy listens on every address); write 0.0.0.0\(asked) for that", false)
    }

    func parseEndpoint(_ text: String, field: String) throws -> Endpoint {
        // Toxiproxy takes ":8080" for every address; netsim keeps to loopback unless told
        // (0.0.0.0:8080), and says so where a listen asks it (service.md).
        let full = text.hasPrefix(":") ? "127.0.0.1" + text : text
        do { return try Endpoint(parsing: full) } catch {
            throw APIError.badRequest("\(field) must be HOST:PORT, e.g. 127.0.0.1:8080, not \(text)")
        }
    }

    private func create(_ request: ProxyRequest) async throws -> ProxyEntry {
        let f = try fields(request)
        guard proxies[f.name] == nil else { throw APIError(409, "proxy already exists") }
        let entry = ProxyEntry(name: f.name, listen: f.listen, upstream: f.upstream, enabled: f.enabled,
                               metrics: ProxyMetrics(proxy: f.name, registry: metricsRegistry))
        if f.enabled {
            do { try await startRelay(entry) } catch {
                entry.metrics.destroy()
                throw error
            }
        }
        proxies[f.name] = entry
        order.append(f.name)
        noteLoopbackOnly(entry, asked: request.listen)
        return entry
    }

    /// Applies the fields given; a new listen address or upstream restarts the relay.
    private func update(_ entry: ProxyEntry, _ request: ProxyRequest) async throws {
        try request.checkTypes()
        var listen = entry.listen
        var upstream = entry.upstream
        if let text = request.listen { listen = try parseEndpoint(text, field: "listen") }
        if let text = request.upstream {
            try checkUpstream(text)
            upstream = text
        }
        let enabled = try request.enabled(otherwise: entry.enabled)
        try await apply(entry, listen: listen, upstream: upstream, enabled: enabled)
        noteLoopbackOnly(entry, asked: request.listen)
    }

    private func apply(_ entry: ProxyEntry, listen: Endpoint, upstream: String, enabled: Bool) async throws {
        let restart = listen != entry.listen || upstream != entry.upstream
        if entry.relay != nil, restart || !enabled { await stopRelay(entry) }
        entry.listen = listen
        entry.upstream = upstream
        entry.enabled = enabled
        guard enabled, entry.relay == nil else { return }
        do {
            try await startRelay(entry)
        } catch {
            // As Toxiproxy: a proxy that could not start is disabled, not shown enabled with no
            // listener (and later updates do not fail on it again until it is enabled).
            entry.enabled = false
            throw error
        }
    }

    private func delete(_ entry: ProxyEntry) async throws {
        await stopRelay(entry)
        proxies.removeValue(forKey: entry.name)
        order.removeAll { $0 == entry.name }
        entry.metrics.destroy()
    }

    /// Every toxic removed, every proxy enabled. A proxy that cannot listen (its port taken
    /// while it was disabled) stays disabled, and the answer is a 500 naming it once every other
    /// proxy is reset (Toxiproxy's ResetState answers the first such error and stops there).
    /// Before, it was a 204, and the proxy showed enabled with no listener.
    private func reset() async throws {
        var failures: [String] = []
        for name in order {
            guard let entry = proxies[name] else { continue }
            entry.toxics.removeAll()
            if let relay = entry.relay {
                for ids in entry.faultIDs.values { for id in ids { await relay.removeFault(id) } }
                entry.faultIDs.removeAll()
                await relay.useOneLink(.unimpaired)  // a chooser too (toxicity below 1)
            }
            entry.enabled = true
            guard entry.relay == nil else { continue }
            do { try await startRelay(entry) } catch {
                entry.enabled = false
                failures.append((error as? APIError)?.message ?? "proxy \(name): \(error)")
            }
        }
        if !failures.isEmpty { throw APIError(500, "reset the toxics, but " + failures.joined(separator: "; ")) }
    }

    /// Creates the listed proxies; an existing one with the same listen and upstream is kept,
    /// one that differs is replaced. 201 with `{"proxies": [...]}`.
    private func populate(_ items: [RequestField<ProxyRequest>]) async throws -> APIResponse {
        // A name given twice would replace its own first proxy, which the answer still listed
        // (QA 59): refused before anything changes.
        var names = Set<String>()
        for name in items.compactMap({ $0.typedValue?.name }) where !names.insert(name).inserted {
            throw APIError.badRequest("populate names the proxy \(name) twice; give each proxy once")
        }
        var done: [ProxyJSON] = []
        for item in items {
            do {
                guard let request = item.typedValue else { throw APIError.badRequest("each proxy must be a JSON object") }
                let f = try fields(request)
                if let existing = proxies[f.name] {
                    let sameListen = existing.listen == f.listen || (f.listen.port == 0 && existing.listen.host == f.listen.host)
                    if sameListen, existing.upstream == f.upstream {
                        try await apply(existing, listen: existing.listen, upstream: existing.upstream, enabled: f.enabled)
                        done.append(existing.json)
                        continue
                    }
                    try await delete(existing)
                }
                done.append(try await create(request).json)
            } catch let error as APIError {
                return .json(error.status, ErrorJSON(error, proxies: done))
            }
        }
        return .json(201, PopulateJSON(proxies: done))
    }
}
