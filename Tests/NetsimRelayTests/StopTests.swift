import Foundation
import NetsimCore
import NetsimFaults
import NetsimLoopback
import NetsimRelay
import Testing

/// The relay's stop, as its peers see it and as its log says it.
@Suite("the relay's stop")
struct StopTests {
    /// A client's bytes a blackhole left unread in the relay's socket when the relay stops:
    /// close(2) over unread bytes sends RST, so the client sees a reset. The log says the relay
    /// reset it and that those bytes were dropped (QA 34: it said `closed by relay, fin`, and
    /// nothing of them).
    @Test func aStopOverUnreadBytesIsAResetAndSaysSo() async throws {
        let server = try RecordingServer()
        defer { server.stop() }
        let relay = Relay(configuration: RelayConfiguration(upstream: server.endpoint, faults: [FaultRule(.blackhole)]))
        let endpoint = try await relay.start()
        let socket = try await offload { try BlockingSocket.connect(to: endpoint) }
        defer { socket.close() }
        let opened = await relay.eventLog.waitFor(timeout: .seconds(10)) { if case .opened = $0.kind { true } else { false } }
        try await offload { try socket.send("hello") }  // on loopback, in the relay's socket when send returns
        await relay.stop()
        let seen = try await offload { () -> SocketFailure? in
            do { _ = try socket.receive(timeout: .seconds(5)); return nil } catch let failure as SocketFailure { return failure } catch { return .other(errno: -1) }
        }
        #expect(opened != nil)
        #expect(seen == .reset, "the client sees what close(2) over unread bytes sends")
        let events = relay.eventLog.events.map(\.kind)
        #expect(events.contains(.dropped(.up, count: 5, fault: "blackhole")), "\(events)")
        #expect(events.contains { if case .closed(.relay, .rst, _, _) = $0 { true } else { false } }, "\(events)")
        #expect(server.snapshot.allSatisfy { $0.received.isEmpty }, "nothing reached the server")
    }
}
