import NetsimCore
import NetsimFaults
import NetsimLink
import Testing

/// `closeNow()`, the relay's shutdown: its close is the relay's in the log, not the client's
/// (the `closed` event said `by: client` for every connection a stopping relay closed).
@Suite("shutdown closes as the relay")
struct ShutdownTests {
    static func closed(_ h: MachineHarness) -> [(Side, CloseKind)] {
        h.events.compactMap { if case .closed(let by, let how, _, _) = $0 { (by, how) } else { nil } }
    }

    /// `closeNow()` and the executor's part: each closed leg goes inactive.
    static func shutDown(_ h: inout MachineHarness) {
        h.machine.closeNow()
        h.process()
        for leg in h.closed.sorted(by: { $0 == .client && $1 == .upstream }) {
            h.machine.legInactive(leg, now: h.now)
            h.process()
        }
    }

    @Test func anIdleConnectionClosedByShutdownIsTheRelays() {
        var h = MachineHarness()
        h.receive("ping", from: .client)
        Self.shutDown(&h)
        #expect(h.finished && h.closed == [.client, .upstream])
        #expect(Self.closed(h).map(\.0) == [.relay] && Self.closed(h).map(\.1) == [.fin])
    }

    /// A connection already ending keeps the ending it had: the client's FIN came first.
    @Test func aClientFINBeforeShutdownStaysTheClients() {
        var h = MachineHarness()
        h.fin(from: .client)
        Self.shutDown(&h)
        #expect(h.finished && Self.closed(h).map(\.0) == [.client])
    }

    /// A client's FIN a blackhole still holds when the relay stops never reached the server: what
    /// the server saw was the relay's close (QA 33: `closed` said `by: client, fin`). Once the FIN
    /// has gone through, it stays the client's.
    @Test func aShutdownOverAHeldFINIsTheRelays() throws {
        for held in [true, false] {
            var h = MachineHarness()
            h.receive("GET / HTTP/1.1\r\n\r\n", from: .client)
            if held { h.apply(try FaultKind(parsing: "blackhole")) }
            h.fin(from: .client)
            #expect(h.endings(of: .upstream) == (held ? [] : [.fin]), "held \(held)")
            Self.shutDown(&h)
            #expect(h.finished, "held \(held)")
            let expected: (Side, CloseKind) = held ? (.relay, .fin) : (.client, .fin)
            #expect(Self.closed(h).first.map { $0 == expected } == true, "held \(held): \(Self.closed(h))")
        }
    }

    /// Bytes a leg's socket still holds unread when the relay stops (a blackhole's from the
    /// client, a stall=down's from the server): that leg is reset, as close(2) over them would,
    /// the bytes are dropped in the log, and the other leg, with nothing unread, gets FIN. The
    /// connection ends as the client saw it: a reset when its own leg was reset, else FIN (QA 44:
    /// the server's leg reset alone said `rst`, and the client got EOF).
    @Test(arguments: [("blackhole", Leg.client), ("stall=down", Leg.upstream)])
    func aShutdownOverUnreadBytesResetsThatLeg(fault: String, unread: Leg) throws {
        var h = MachineHarness()
        h.apply(try FaultKind(parsing: fault))
        let other: Leg = unread == .client ? .upstream : .client
        h.machine.closeNow(unread: [unread: 5, other: 0])
        h.process()
        for leg in [Leg.client, .upstream] { h.machine.legInactive(leg, now: h.now) }
        h.process()
        #expect(h.finished)
        #expect(h.endings(of: unread) == [.rst] && h.endings(of: other).isEmpty && h.closed.contains(other), "\(h.ended) \(h.closed)")
        let name = String(fault.prefix { $0 != "=" })
        #expect(h.events.contains(.dropped(unread == .client ? .up : .down, count: 5, fault: FaultName(name))), "\(h.events)")
        let how: CloseKind = unread == .client ? .rst : .fin
        #expect(Self.closed(h).first.map { $0 == (.relay, how) } == true, "\(Self.closed(h))")
    }

    /// A stale connection's close comes from the far end of the path: a round trip after the
    /// client's bytes (QA 68: at once, a 0 ms round trip in the capture), at once on a link
    /// without latency. Bytes written meanwhile are swallowed and set off nothing more.
    @Test func aStaleConnectionsResetComesARoundTripAfterTheClientsBytes() {
        var link = LinkConfiguration.unimpaired
        link.up.latency = .milliseconds(30)
        link.down.latency = .milliseconds(20)
        var h = MachineHarness(link: link)
        h.advance(by: .seconds(1))  // a connection long open: its handshake's round trip is over
        h.apply(.stale(.rst))
        let sent = h.now
        h.receive("GET / HTTP/1.1\r\n\r\n", from: .client)
        h.advance(to: sent + 49_999_999)
        h.receive("more", from: .client)
        #expect(h.endings(of: .client).isEmpty, "nothing yet, 50 ms not gone")
        h.advance(to: sent + 50_000_000)
        #expect(h.endings(of: .client) == [.rst], "the reset, after 30 ms up and 20 ms down")
        var plain = MachineHarness()
        plain.apply(.stale(.fin))
        plain.receive("GET / HTTP/1.1\r\n\r\n", from: .client)
        #expect(plain.endings(of: .client) == [.fin], "no latency: at once")
    }

    /// On a stale connection the client's FIN and then the server's are only tidied up, never
    /// forwarded; they were still sent, and the capture must show them (it showed only the
    /// relay's FINs, and `profile` said the client never closed).
    @Test func peersFINsOnAStaleConnectionAreStillSaid() {
        var h = MachineHarness()
        h.receive("GET / HTTP/1.1\r\n\r\n", from: .client)
        h.apply(.stale(.rst))
        h.fin(from: .client)
        #expect(h.endings(of: .upstream) == [.fin], "the server is told the client left")
        h.fin(from: .upstream)
        #expect(h.peerEnded.map(\.0) == [.client, .upstream] && h.peerEnded.allSatisfy { $0.1 == .fin }, "\(h.peerEnded)")
        for leg in [Leg.client, .upstream] { h.machine.legInactive(leg, now: h.now) }
        h.process()
        #expect(h.finished && Self.closed(h).map(\.0) == [.client] && Self.closed(h).map(\.1) == [.fin])
    }

    /// A reset while the server's FIN still waits behind a slow answer: the client never sees
    /// that FIN, so the connection was ended by the reset — the relay's (`rst`), or the client's
    /// own (QA 57: a client leaving a slow download through the proxy was logged `closed by
    /// upstream, fin`). Once the FIN has been delivered, the server ended it.
    @Test(arguments: [Side.relay, .client])
    func aResetOverAnUndeliveredFINIsTheResetters(resetter: Side) throws {
        var link = LinkConfiguration.unimpaired
        link.down.bandwidth = DataRate(bitsPerSecond: 8_000)  // 1 KB/s
        for delivered in [false, true] {
            var h = MachineHarness(link: link)
            h.receive("GET / HTTP/1.1\r\n\r\n", from: .client)
            h.receive(String(repeating: "x", count: 2000), from: .upstream)
            h.fin(from: .upstream)
            if delivered { h.advance(by: .seconds(3)) }
            if resetter == .relay {
                h.apply(try FaultKind(parsing: "rst"))
            } else {
                h.machine.peerReset(.client, now: h.now)
                h.process()
            }
            for leg in [Leg.client, .upstream] { h.machine.legInactive(leg, now: h.now) }
            h.process()
            #expect(h.finished)
            let expected: (Side, CloseKind) = delivered ? (.upstream, .fin) : (resetter, .rst)
            #expect(Self.closed(h).first.map { $0 == expected } == true, "delivered \(delivered): \(Self.closed(h))")
        }
    }

    /// An intercepted connection's HTTP layer (the wire layer's upstream) ends it itself, an h2
    /// GOAWAY: its FIN to the client is the relay's in `half_closed` as in `closed` (QA 50: the
    /// log said `half_closed` by upstream, then `closed` by relay). One that could not reach
    /// upstream ends it as upstream's.
    @Test(arguments: [Side.relay, .upstream])
    func theHTTPLayersOwnCloseIsItsSidesFINToo(side: Side) {
        var h = MachineHarness()
        h.receive("request", from: .client)
        if side == .relay { h.machine.httpLayerCloses() } else { h.machine.endsForWantOfUpstream() }
        h.fin(from: .upstream)
        let halves = h.events.compactMap { if case .halfClosed(let by) = $0 { by } else { nil } }
        #expect(halves == [side], "\(h.events)")
        Self.shutDown(&h)
        #expect(Self.closed(h).first.map { $0 == (side, .fin) } == true, "\(Self.closed(h))")
    }
}
