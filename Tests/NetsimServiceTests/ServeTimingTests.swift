import Foundation
import NetsimCore
import NetsimLoopback
import Testing
@testable import NetsimService

/// `netsim serve` keeps Toxiproxy's timings: a Toxiproxy proxy connects at once, and a latency
/// toxic delays the data only. The relay's simulated handshake (a new connection's first bytes a
/// round trip late) would have made a fresh connection's first answer take twice the toxic.
@Suite("serve: Toxiproxy's timings")
struct ServeTimingTests {
    typealias H = HTTPTestSupport

    @Test func aFreshConnectionPaysTheLatencyToxicOnceAsInToxiproxy() async throws {
        try await StandInToxicTests.withProxy { api, proxy, _ in
            let (added, toxic) = try await H.api(api, "POST", "/proxies/web/toxics", json: #"{"type":"latency","attributes":{"latency":500}}"#)
            #expect(added == 200, "\(toxic)")
            let elapsed = try await offload { () -> Duration in
                let started = ContinuousClock.now
                let socket = try BlockingSocket.connect(to: proxy)
                defer { socket.close() }
                _ = try H.get(socket, "/fresh")
                return ContinuousClock.now - started
            }
            // 500 ms downstream; with the handshake charged it was 1 s.
            #expect(elapsed >= .milliseconds(500) && elapsed < .milliseconds(900), "\(elapsed)")
        }
    }
}
