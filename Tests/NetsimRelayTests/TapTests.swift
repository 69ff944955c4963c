import Foundation
import NIOCore
import NetsimCore
import NetsimLink
import NetsimLoopback
import NetsimRelay
import Testing

/// Records what a tap sees.
final class RecordingTap: RelayTap, @unchecked Sendable {
    enum Seen: Equatable {
        case opened(Side)
        case received(Side, String)
        case sent(Side, String)
        case ended(Side, CloseKind, fromPeer: Bool)

        var side: Side {
            switch self {
            case .opened(let side): side
            case .received(let side, _): side
            case .sent(let side, _): side
            case .ended(let side, _, _): side
            }
        }
    }

    private let lock = NSLock()
    private var stored: [(time: Int64, seen: Seen)] = []
    var seen: [Seen] { lock.withLock { stored.map(\.seen) } }
    var times: [Int64] { lock.withLock { stored.map(\.time) } }

    private func add(_ seen: Seen, _ time: Int64) { lock.withLock { stored.append((time, seen)) } }
    func legOpened(_ connection: ConnectionID, leg: Side, local: SocketAddress?, remote: SocketAddress?, at time: Int64) {
        add(.opened(leg), time)
    }
    func received(_ connection: ConnectionID, leg: Side, _ bytes: ByteBuffer, at time: Int64) {
        add(.received(leg, String(buffer: bytes)), time)
    }
    func sent(_ connection: ConnectionID, leg: Side, _ bytes: ByteBuffer, at time: Int64) {
        add(.sent(leg, String(buffer: bytes)), time)
    }
    func ended(_ connection: ConnectionID, leg: Side, _ how: CloseKind, fromPeer: Bool, at time: Int64) {
        add(.ended(leg, how, fromPeer: fromPeer), time)
    }
}

@Suite("Relay tap")
struct TapTests {
    @Test func seesBytesWhenTheyCrossEachSocketAndHowEachLegEnded() async throws {
        let server = try LoopbackServer.echo()
        defer { server.stop() }
        let tap = RecordingTap()
        var link = LinkConfiguration.unimpaired
        link.up.latency = .milliseconds(50)
        let relay = Relay(configuration: RelayConfiguration(upstream: server.endpoint, link: link), tap: tap)
        let endpoint = try await relay.start()
        try await offload {
            let socket = try BlockingSocket.connect(to: endpoint)
            try socket.send("ping")
            _ = try socket.receive(exactly: 4)
            socket.shutdownWrite()
            _ = try socket.receiveToEnd()
        }
        _ = await relay.eventLog.waitFor(timeout: .seconds(5)) { $0.isClosed }
        await relay.stop()

        let seen: [RecordingTap.Seen] = tap.seen
        let times: [Int64] = tap.times
        // Each leg in its own order (the two legs interleave as timing allows).
        let expectedClient: [RecordingTap.Seen] = [
            .opened(.client), .received(.client, "ping"), .sent(.client, "ping"),
            .ended(.client, .fin, fromPeer: true), .ended(.client, .fin, fromPeer: false),
        ]
        let expectedUpstream: [RecordingTap.Seen] = [
            .opened(.upstream), .sent(.upstream, "ping"), .received(.upstream, "ping"),
            .ended(.upstream, .fin, fromPeer: false), .ended(.upstream, .fin, fromPeer: true),
        ]
        #expect(seen.filter { $0.side == .client } == expectedClient)
        #expect(seen.filter { $0.side == .upstream } == expectedUpstream)
        // The ping waited 50 ms in the relay: it crossed the upstream socket that much later.
        let arrivedIndex: Int = seen.firstIndex(of: RecordingTap.Seen.received(.client, "ping")) ?? 0
        let forwardedIndex: Int = seen.firstIndex(of: RecordingTap.Seen.sent(.upstream, "ping")) ?? 0
        let waited: Int64 = times[forwardedIndex] - times[arrivedIndex]
        #expect(waited >= 49_000_000, "sent upstream after the injected delay, waited \(waited) ns")
    }
}
