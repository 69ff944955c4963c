import Foundation
import NIOCore
import NetsimCore
import NetsimHTTP
import NetsimPcap
import NetsimRelay
import NetsimScenario

/// The upstream a scenario names, started for the run.
struct UpstreamHandle {
    let endpoint: Endpoint
    /// How the relay reaches an external upstream: its name resolved once, here, so the run
    /// connects where it checked (nil for the servers netsim starts: their address is numeric).
    private(set) var connector: AddressConnector?
    private let server: BuiltinServer?
    private var replay: ReplayServer?
    /// The replay server's times are clock readings: made scenario times with the log's
    /// origin when they are read (the log is rebased after the upstream started).
    private var log: EventLog?

    /// - Parameter host: where the built-in server listens: loopback, or a packet link's host side.
    static func start(_ spec: UpstreamSpec, log: EventLog, tls: RunTLS? = nil, scenarioFile: String = "", workingDirectory: String = ".",
                      host: String = "127.0.0.1") async throws -> UpstreamHandle {
        switch spec {
        case .builtin(let routes, let idleTimeout, let wire):
            let transport: UpstreamTransport
            do {
                transport = try tls?.transport(wire) ?? UpstreamTransport(protocols: wire.protocols)
            } catch {
                throw RunnerError.invalid("cannot set up TLS for the built-in upstream: \(error)")
            }
            let server = BuiltinServer(routes: routes, idleTimeout: idleTimeout, transport: transport, eventLog: log)
            do {
                return UpstreamHandle(endpoint: try await server.start(host: host), server: server)
            } catch {
                throw RunnerError.failed("cannot start the built-in upstream: \(error)")
            }
        case .address(let endpoint):
            // Resolved now, so a name that does not resolve is the scenario's error (exit 2), not
            // the relay's `SocketAddressError.UnknownHost` (exit 1) once it has started.
            var handle = UpstreamHandle(endpoint: endpoint, server: nil)
            do { handle.connector = try AddressConnector(resolving: endpoint) } catch {
                throw RunnerError.invalid("\(scenarioFile): upstream address \(endpoint): \(SocketFailureText.describe(error))")
            }
            return handle
        case .replay(let path):
            let replay = try await ReplayUpstream.start(path, scenarioFile: scenarioFile, workingDirectory: workingDirectory)
            var handle = UpstreamHandle(endpoint: replay.endpoint, server: nil)
            handle.replay = replay.server
            handle.log = log
            return handle
        }
    }

    /// Tells the built-in server how long after its accept a connection is accepted across the
    /// relay's link (``BuiltinServer/allowForHandshake(_:)``); other upstreams keep their own times.
    func allowForHandshake(_ allowance: @escaping @Sendable () -> Duration) {
        server?.allowForHandshake(allowance)
    }

    /// The peer address of each built-in server connection `requests` came on.
    func peers(of requests: [ServerRequest]) -> [Int: Endpoint] {
        guard let server else { return [:] }
        return Dictionary(Set(requests.map(\.connection)).compactMap { number in server.peerAddress(ofConnection: number).map { (number, $0) } },
                          uniquingKeysWith: { first, _ in first })
    }

    func requests() async -> [ServerRequest] {
        if let replay, let log { return ReplayUpstream.serverRequests(replay, origin: log.origin) }
        return server?.requests ?? []
    }

    func stop() async {
        await server?.stop()
        await replay?.stop()
    }
}
