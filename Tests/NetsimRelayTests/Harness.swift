import Foundation
import NetsimCore
import NetsimLink
import NetsimLoopback
import NetsimRelay
import Testing


/// Starts a relay in front of `upstream` and stops it when `body` returns.
func withRelay<T>(
    listen: Endpoint = Endpoint(host: "127.0.0.1", port: 0),
    upstream: Endpoint,
    link: LinkConfiguration = .unimpaired,
    faults: [FaultRule] = [],
    seed: UInt64 = 1,
    bufferLimit: Int = 4 << 20,
    connectTimeout: Duration = .seconds(127),
    observeHTTP: Bool = false,
    splice: Bool = false,
    _ body: (Relay, Endpoint) async throws -> T
) async throws -> T {
    let relay = Relay(configuration: RelayConfiguration(
        listen: listen, upstream: upstream, link: link, faults: faults, seed: seed,
        connectTimeout: connectTimeout, bufferLimit: bufferLimit, observeHTTP: observeHTTP, splice: splice))
    let endpoint = try await relay.start()
    do {
        let result = try await body(relay, endpoint)
        await relay.stop()
        return result
    } catch {
        await relay.stop()
        throw error
    }
}

/// A loopback server that records what each connection sent it and how the connection ended.
final class RecordingServer: @unchecked Sendable {
    enum Ending: Equatable { case open, eof, reset, other(String) }

    struct Connection {
        var received: [UInt8] = []
        var ending = Ending.open
    }

    /// Every connection so far; tests wait on it instead of polling.
    private let connections = Waitable<[Connection]>([])
    private(set) var server: LoopbackServer!

    /// - Parameter respond: called with each chunk the server reads; returns bytes to send back.
    init(respond: @escaping @Sendable ([UInt8]) -> [UInt8] = { $0 }) throws {
        server = try LoopbackServer { [self] socket in
            var index = 0
            connections.update {
                index = $0.count
                $0.append(Connection())
            }
            while true {
                do {
                    let chunk = try socket.receive(timeout: .seconds(60))
                    if chunk.isEmpty {
                        connections.update { $0[index].ending = .eof }
                        socket.shutdownWrite()
                        return
                    }
                    connections.update { $0[index].received += chunk }
                    let reply = respond(chunk)
                    if !reply.isEmpty { try socket.send(reply) }
                } catch let failure as SocketFailure {
                    connections.update { $0[index].ending = failure == .reset ? .reset : .other("\(failure)") }
                    return
                } catch {
                    connections.update { $0[index].ending = .other("\(error)") }
                    return
                }
            }
        }
    }

    var endpoint: Endpoint { server.endpoint }
    var snapshot: [Connection] { connections.value }
    var totalReceived: Int { snapshot.reduce(0) { $0 + $1.received.count } }
    func stop() { server.stop() }

    /// Waits until `predicate` holds for the recorded connections (checked on every change,
    /// never on a timer), or the timeout passes.
    func wait(timeout: Duration = .seconds(5), _ predicate: @escaping @Sendable ([Connection]) -> Bool) async -> Bool {
        await connections.wait(within: timeout) { predicate($0) ? true : nil } ?? false
    }
}

/// Monotonic seconds, for coarse timing assertions.
func elapsed(since start: ContinuousClock.Instant) -> Double {
    let d = ContinuousClock.now - start
    return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
}

extension Event {
    var isClosed: Bool { if case .closed = kind { true } else { false } }
}
