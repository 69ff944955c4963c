import Foundation
import NetsimCore
import NetsimFaults
import NetsimLoopback
import NetsimRelay
import Testing

/// `rst=down[,DELAY]` (Toxiproxy's `reset_peer`): the request reaches the server, and its answer
/// is met with a reset (dropped), at once or DELAY after it came.
@Suite("reset when the answer comes")
struct ResetOnAnswerTests {
    @Test(arguments: [Duration.zero, .milliseconds(300)])
    func theRequestArrivesTheAnswerIsReset(after delay: Duration) async throws {
        let server = try RecordingServer()
        defer { server.stop() }
        try await withRelay(upstream: server.endpoint, faults: [FaultRule(.rst(on: .down, after: delay))]) { relay, endpoint in
            let (failure, waited) = try await offload { () -> (SocketFailure?, Duration) in
                let socket = try BlockingSocket.connect(to: endpoint)
                defer { socket.close() }
                try socket.send("request")
                let start = ContinuousClock.now
                do {
                    let bytes = try socket.receive(timeout: .seconds(10))
                    return (bytes.isEmpty ? nil : .other(errno: 0), ContinuousClock.now - start)
                } catch let failure as SocketFailure { return (failure, ContinuousClock.now - start) }
            }
            #expect(failure == .reset, "\(String(describing: failure))")
            #expect(await server.wait { $0.first.map { String(decoding: $0.received, as: UTF8.self) } == "request" }, "the request reached the server")
            // A timer is never early: the reset comes no sooner than the delay after the answer.
            #expect(waited >= delay, "reset after \(waited)")
            #expect(relay.eventLog.events.contains { if case .faultFired("rst", let detail) = $0.kind { detail.contains("from the server (dropped)") } else { false } })
        }
    }

    @Test func itsFormsParse() throws {
        #expect(try FaultKind(parsing: "rst") == .rst)
        #expect(try FaultKind(parsing: "rst=down") == .rst(on: .down))
        #expect(try FaultKind(parsing: "rst=up,250ms") == .rst(on: .up, after: .milliseconds(250)))
        #expect(FaultKind.rst(on: .down, after: .milliseconds(250)).description == "rst=down,250ms")
        for bad in ["rst=sideways", "rst=down,soon", "rst=,1s"] {
            #expect(throws: UnitParseError.self, "\(bad)") { try FaultKind(parsing: bad) }
        }
    }
}
