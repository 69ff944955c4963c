import NetsimCore
import NetsimFaults
import NetsimLoopback
@testable import NetsimRelay
import NetsimRoutes
import Testing

extension InterceptionTests {
    /// A client that opens streams after the relay's graceful GOAWAY: they are ignored, as RFC
    /// 9113 §6.8 lets a server, and the log says so. Before, nothing said it: such a client
    /// waited for its timeout, and the report showed only that (QA 57).
    @Test func streamsOpenedAfterAGracefulGoAwayAreSaidToBeIgnored() async throws {
        let setup = try Setup(routes: [HTTPRoute(path: "/deploy", body: .text("done"), delay: .seconds(5))])
        let (relay, endpoint) = try await setup.relay()
        let client = try await RawH2Client(endpoint, authority: setup.authority)
        try await client.send(RawH2Client.get("/deploy", stream: 1))
        _ = await relay.eventLog.waitFor(timeout: .seconds(20)) { if case .httpRequest(_, "/deploy", _, _, _, _, _) = $0.kind { true } else { false } }
        try await relay.addFault(FaultRule(.goAway(), target: .existing))   // stream 1 is still in flight (5 s)
        let frames = await client.wait { $0.contains { $0.type == 7 } }
        try await client.send(RawH2Client.get("/deploy", stream: 3) + RawH2Client.get("/deploy", stream: 5))
        _ = await relay.eventLog.waitFor(timeout: .seconds(20)) {
            if case .faultFired(_, let detail) = $0.kind { detail.hasPrefix("stream 5 opened after") } else { false }
        }
        await client.close()
        await relay.stop()
        await setup.server.stop()
        #expect(frames.contains { $0.type == 7 && $0.payload.prefix(8) == [0, 0, 0, 1, 0, 0, 0, 0] }, "GOAWAY, last stream 1, NO_ERROR")
        let said = relay.eventLog.events.compactMap { event -> String? in
            guard case .faultFired("goaway", let detail) = event.kind, detail.contains("opened after") else { return nil }
            return detail
        }
        #expect(said == [3, 5].map { "stream \($0) opened after the GOAWAY (last stream 1) and ignored, as RFC 9113 §6.8 lets a server: the client must send it again on a new connection" })
        #expect(setup.server.requests.count == 1, "only stream 1 reached the server: \(setup.server.requests)")
    }

    /// The scanner finds each HEADERS frame's stream however the bytes are cut, past the preface
    /// and other frames' payloads (a DATA payload that looks like a HEADERS header is payload).
    @Test func theFrameScannerFindsHeadersInAnyCut() {
        let fakeHeader: [UInt8] = [0, 0, 0, 1, 0, 0, 0, 0, 9]
        let data: [UInt8] = [0, 0, UInt8(fakeHeader.count), 0, 0, 0, 0, 0, 1] + fakeHeader
        let bytes = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + [0, 0, 0, 4, 0, 0, 0, 0, 0]
            + RawH2Client.get("/a", stream: 1) + data + RawH2Client.get("/b", stream: 3)
            + [0, 0, 4, 3, 0, 0, 0, 0, 3, 0, 0, 0, 8]   // RST_STREAM
            + RawH2Client.get("/c", stream: 131)
        for cut in [1, 2, 7, 9, 10, 64, bytes.count] {
            var scanner = HTTP2FrameScanner()
            var opened: [Int] = []
            var index = 0
            while index < bytes.count {
                scanner.scan(bytes[index..<min(index + cut, bytes.count)]) { opened.append($0) }
                index += cut
            }
            #expect(opened == [1, 3, 131], "cut \(cut)")
        }
    }
}
