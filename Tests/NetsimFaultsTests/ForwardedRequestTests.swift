import NetsimCore
import NetsimFaults
import NetsimLink
import Testing

/// `http_request` says a request head was forwarded upstream, `http_response` that a response
/// reached the client: each is logged when its bytes are written on, not when the relay read
/// them, and never for bytes the connection ended with still held (a blackhole's, a stall's),
/// which are logged as `dropped` instead.
@Suite("observed requests and responses are logged when they reach the far side")
struct ForwardedRequestTests {
    static let request = "GET /x HTTP/1.1\r\nHost: test\r\n\r\n"

    /// The executor reads the bytes, then its HTTP observer reports the head it found in them.
    static func receiveRequest(_ h: inout MachineHarness) {
        h.receive(request, from: .client)
        h.machine.requestForwarded(HTTPRequestSummary(method: "GET", uri: "/x"))
        h.process()
    }

    static func requestsLogged(_ h: MachineHarness) -> Int {
        h.events.filter { if case .httpRequest = $0 { true } else { false } }.count
    }

    @Test("unimpaired: logged as it is read, before its bytes event")
    func unimpaired() {
        var h = MachineHarness(observesHTTP: true)
        Self.receiveRequest(&h)
        #expect(Self.requestsLogged(h) == 1)
        #expect(h.text(.upstream) == Self.request)
    }

    @Test("a delayed request is logged when it is written upstream, one delay after it was read")
    func delayed() {
        var link = LinkConfiguration.unimpaired
        link.up.latency = .milliseconds(50)
        var h = MachineHarness(link: link, observesHTTP: true)
        h.advance(by: .milliseconds(200))  // past the simulated handshake
        Self.receiveRequest(&h)
        #expect(Self.requestsLogged(h) == 0, "still on the simulated link")
        h.advance(by: .milliseconds(49))
        #expect(Self.requestsLogged(h) == 0)
        h.advance(by: .milliseconds(1))
        #expect(h.text(.upstream) == Self.request)
        #expect(Self.requestsLogged(h) == 1)
        let kinds = h.events.map { "\($0)" }
        let request = kinds.firstIndex { $0.hasPrefix("httpRequest") }, bytes = kinds.firstIndex { $0.hasPrefix("bytes") }
        #expect(request != nil && bytes != nil && request! < bytes!, "the request, then its bytes: \(kinds)")
    }

    @Test("a blackholed request the client gives up on is dropped, never logged as forwarded")
    func blackholed() {
        var h = MachineHarness(faults: [.blackhole], connect: false, observesHTTP: true)
        Self.receiveRequest(&h)
        h.advance(by: .seconds(2))
        h.fin(from: .client)
        h.machine.legInactive(.client, now: h.now)
        h.process()
        #expect(h.finished)
        #expect(Self.requestsLogged(h) == 0, "\(h.events)")
        let dropped = h.events.contains {
            if case .dropped(.up, let count, "blackhole") = $0 { count == Self.request.utf8.count } else { false }
        }
        #expect(dropped, "the held bytes are said to be lost: \(h.events)")
        #expect("\(h.events.last!)".contains("upBytes: 0"))
    }

    @Test("a blackholed request is logged once the fault lifts and it reaches the server")
    func blackholeLifted() {
        var h = MachineHarness(faults: [.blackhole], connect: false, observesHTTP: true)
        Self.receiveRequest(&h)
        #expect(Self.requestsLogged(h) == 0)
        h.lift(1)
        h.connectIfAsked()
        #expect(h.text(.upstream) == Self.request)
        #expect(Self.requestsLogged(h) == 1)
    }

    static func responsesLogged(_ h: MachineHarness) -> Int {
        h.events.filter { if case .httpResponse = $0 { true } else { false } }.count
    }

    @Test("a response is logged when its last byte reaches the client; one a stall holds to the end, never")
    func responses() {
        var h = MachineHarness(link: StallTests.slowDown, observesHTTP: true)
        h.advance(by: .milliseconds(200))
        Self.receiveRequest(&h)
        h.receive("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", from: .upstream)
        h.machine.responseForwarded(status: 200, bytes: 2)
        h.process()
        #expect(Self.responsesLogged(h) == 0, "100 ms on its way down")
        h.advance(by: .milliseconds(100))
        #expect(h.text(.client).hasSuffix("ok"))
        #expect(Self.responsesLogged(h) == 1)

        var stalled = MachineHarness(observesHTTP: true)
        stalled.apply(.stall(.down))
        Self.receiveRequest(&stalled)
        stalled.receive("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", from: .upstream)
        stalled.machine.responseForwarded(status: 200, bytes: 2)
        stalled.process()
        stalled.machine.legInactive(.client, now: stalled.now)
        stalled.machine.legInactive(.upstream, now: stalled.now)
        stalled.process()
        #expect(stalled.finished)
        #expect(Self.requestsLogged(stalled) == 1 && Self.responsesLogged(stalled) == 0, "\(stalled.events)")
        #expect(stalled.events.contains { if case .dropped(.down, 40, "stall") = $0 { true } else { false } }, "\(stalled.events)")
    }
}
