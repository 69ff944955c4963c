import Foundation

/// A network for hand-written tests: netsim's built-in server behind its relay, with a link
/// and faults you set and lift as the test goes.
///
/// ```swift
/// let network = try await TestNetwork.start(routes: [HTTPRoute(path: "/feed", body: .text("[]"))], profile: "3g")
/// defer { Task { await network.stop() } }   // or `await network.stop()` at the end
/// _ = try await myClient.get(network.url("/feed"))          // warms the pool
/// try await network.inject("stale=rst", target: .existing)   // the phone locks
/// _ = try await myClient.get(network.url("/feed"))          // must recover
/// #expect(network.serverRequests.count == 2)
/// ```
///
/// Both listen on 127.0.0.1 on free ports; every fault and close is in ``events``.
public final class TestNetwork: Sendable {
    /// The relay's address: where your client connects.
    public let endpoint: Endpoint
    public let relay: Relay
    private let server: BuiltinServer
    private let log: EventLog

    private init(endpoint: Endpoint, relay: Relay, server: BuiltinServer, log: EventLog) {
        self.endpoint = endpoint
        self.relay = relay
        self.server = server
        self.log = log
    }

    /// Starts the server with `routes` and the relay in front of it.
    /// - Parameters:
    ///   - link: the link every connection gets (``NetsimLink/LinkConfiguration/unimpaired`` by default).
    ///   - seed: every random decision of the link and the faults flows from it.
    public static func start(routes: [HTTPRoute], link: LinkConfiguration = .unimpaired, seed: UInt64 = 1) async throws -> TestNetwork {
        let log = EventLog()
        let server = BuiltinServer(routes: routes, eventLog: log)
        let upstream = try await server.start()
        let relay = Relay(configuration: RelayConfiguration(upstream: upstream, link: link, seed: seed, observeHTTP: true), eventLog: log)
        do {
            return TestNetwork(endpoint: try await relay.start(), relay: relay, server: server, log: log)
        } catch {
            await server.stop()
            throw error
        }
    }

    /// Starts it with one of `netsim profiles`' links (`3g`, `edge`, `lte`, …).
    public static func start(routes: [HTTPRoute], profile: String, seed: UInt64 = 1) async throws -> TestNetwork {
        guard let named = LinkProfile.named(profile) else {
            throw RunnerError.invalid("no link profile '\(profile)'; available: \(LinkProfile.all.map(\.name).joined(separator: ", "))")
        }
        return try await start(routes: routes, link: named.link, seed: seed)
    }

    /// `http://127.0.0.1:PORT` + `path`, through the relay.
    public func url(_ path: String) -> URL {
        URL(string: "http://\(endpoint.host):\(endpoint.port)\(path)")!
    }

    /// Puts a fault in force now, written as on the command line (`rst`, `stale=rst`,
    /// `blackhole`, `slow-connect=2s`, … — `netsim faults` lists them; the link is ``setLink(_:)``'s).
    /// - Parameters:
    ///   - target: connections open now, new ones, or both.
    ///   - lasts: lift it by itself after this long.
    /// - Returns: the id ``lift(_:)`` takes.
    @discardableResult
    public func inject(_ fault: String, target: FaultTarget = .all, lasts: Duration? = nil) async throws -> FaultID {
        let kind: FaultKind
        do { kind = try FaultCatalog.parse(fault) } catch {
            throw RunnerError.invalid("fault '\(fault)': \(error)")
        }
        let rule = FaultRule(kind, target: target, lasts: lasts)
        try rule.validate()
        return try await relay.addFault(rule)
    }

    /// Lifts a fault ``inject(_:target:lasts:)`` put in force.
    public func lift(_ id: FaultID) async { await relay.removeFault(id) }

    /// Changes the link of every connection, open ones included.
    public func setLink(_ link: LinkConfiguration) async { await relay.setLink(link) }

    /// What happened so far: connections, faults, closes, HTTP requests the relay saw.
    public var events: [Event] { log.events }

    /// The requests the server received, with the connection each came on.
    public var serverRequests: [ServerRequest] { server.requests }

    /// Stops the relay (closing every connection) and the server.
    public func stop() async {
        await relay.stop()
        await server.stop()
    }
}
