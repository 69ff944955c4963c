import NetsimCore
import NetsimFaults
import NetsimLink
import Testing

@Suite("stall and blackhole, on a clock the test moves")
struct StallTests {
    @Test("stall=down: the answer and its FIN wait, requests still flow; lifting delivers all in order")
    func stallDown() {
        var h = MachineHarness()
        h.apply(.stall(.down))
        h.receive("request", from: .client)
        #expect(h.text(.upstream) == "request")
        h.receive("answer", from: .upstream)
        h.fin(from: .upstream)
        #expect(h.text(.client) == "")
        #expect(h.ended.isEmpty, "no close either")
        #expect(h.readsAllowed[.upstream] == false, "the server is not read while its direction is stalled")
        h.advance(by: .seconds(60))
        #expect(h.text(.client) == "")
        h.lift()
        #expect(h.text(.client) == "answer")
        #expect(h.endings(of: .client) == [.fin])
        #expect(h.readsAllowed[.upstream] == true)
    }

    @Test("drop=down: the request goes through, the answer is discarded, a FIN passes; lifting closes the connection")
    func dropDown() {
        var h = MachineHarness()
        h.apply(.drop(.down))
        h.receive("request", from: .client)
        #expect(h.text(.upstream) == "request")
        h.receive("answer", from: .upstream)
        #expect(h.text(.client) == "")
        #expect(h.readsAllowed[.upstream] != false, "dropped, not held: the server is still read")
        #expect(h.events.contains { if case .dropped(.down, 6, "drop") = $0 { true } else { false } })
        h.lift()
        #expect(h.text(.client) == "", "nothing was held for later")
        #expect(h.endings(of: .client) == [.fin], "the stream has a hole: it is closed when the fault lifts")
        #expect("\(h.events)".contains("the byte stream lost 6 bytes while dropped"), "\(h.events)")

        // Closed all the same when nothing was dropped, and the reason says so (it claimed a hole).
        var idle = MachineHarness()
        idle.apply(.drop(.down))
        idle.lift()
        #expect(idle.endings(of: .client) == [.fin])
        #expect("\(idle.events)".contains("nothing was dropped"), "\(idle.events)")

        var closing = MachineHarness()
        closing.apply(.drop(.down))
        closing.fin(from: .client)
        #expect(closing.endings(of: .upstream) == [.fin], "the client's close passes")
    }

    /// A stall is the link down: on a rate-limited link the bytes it was to carry wait the
    /// stall's length and then leave at the rate, with what came meanwhile behind them. They kept
    /// their times and went at once when it lifted (QA 55: 121 KB in 0.25 s at 780 kbit/s), so a
    /// 2 s stall delayed a download by nothing.
    @Test(arguments: [Optional(FaultKind.stall(.down)), .blackhole])
    func aHeldLinkResumesAtItsRate(fault: FaultKind?) throws {
        let fault = try #require(fault)
        var link = LinkConfiguration.unimpaired
        link.down.bandwidth = DataRate(bitsPerSecond: 64_000)  // 8000 bytes a second, 64-byte pieces
        var h = MachineHarness(link: link)
        h.receive([UInt8](repeating: 1, count: 8000), from: .upstream)  // one second of the link
        h.advance(to: 250_000_000)
        h.apply(fault)
        let before = h.sent[.client]?.count ?? 0
        #expect(before == 1984, "31 pieces went before the hold: \(before)")
        h.advance(to: 1_000_000_000)
        h.receive([UInt8](repeating: 2, count: 800), from: .upstream)  // arrives while held
        h.advance(to: 2_250_000_000)
        #expect(h.sent[.client]?.count == before, "nothing moves while held")
        h.lift()
        #expect(h.sent[.client]?.count == before, "no burst when the hold lifts")
        h.advance(to: 2_750_000_000)
        let half = h.sent[.client]?.count ?? 0
        #expect(abs(half - (before + 4000)) <= 64, "half a second at the rate after the lift: \(half)")
        h.advance(to: 2_999_000_000)
        #expect((h.sent[.client]?.count ?? 0) < 8000, "the first answer ends the stall's 2 s later than it would have")
        h.advance(to: 3_000_000_000)
        #expect(h.sent[.client]?.count == 8000)
        h.advance(to: 3_099_000_000)
        #expect((h.sent[.client]?.count ?? 0) < 8800, "what came while held serializes behind it")
        h.advance(to: 3_100_000_000)
        #expect(h.sent[.client] == [UInt8](repeating: 1, count: 8000) + [UInt8](repeating: 2, count: 800))
    }

    /// `drop` as it fires loses what the link still held too, not only what comes after; a FIN
    /// behind those bytes still passes (QA 55: on a slow link the answer the relay held went on
    /// arriving for the whole window).
    @Test func aDropLosesTheBytesTheLinkStillHeld() {
        var link = LinkConfiguration.unimpaired
        link.down.latency = .seconds(1)
        var h = MachineHarness(link: link)
        h.receive("answer", from: .upstream)
        h.fin(from: .upstream)
        h.advance(to: 500_000_000)
        h.apply(.drop(.down))
        #expect(h.events.contains { if case .dropped(.down, 6, "drop") = $0 { true } else { false } }, "\(h.events)")
        h.advance(to: 2_000_000_000)
        #expect(h.text(.client) == "", "the held answer is lost")
        #expect(h.endings(of: .client) == [.fin], "its FIN passes, at its time")
    }

    @Test("stall on a new connection still connects upstream; blackhole holds the connect until it lifts")
    func connectHeld() {
        let stalled = MachineHarness(faults: [.stall()], connect: false)
        #expect(stalled.connectRequested)
        var held = MachineHarness(faults: [.blackhole], connect: false)
        #expect(!held.connectRequested)
        held.receive("early", from: .client)
        held.lift(1)
        #expect(held.connectRequested)
        held.connectIfAsked()
        #expect(held.text(.upstream) == "early")
    }

    @Test("slow-close=D,down holds only the server's FIN; the client's passes at once (Toxiproxy's stream)")
    func slowCloseOneDirection() throws {
        #expect(try FaultKind(parsing: "slow-close=1s,down") == .slowClose(.seconds(1), .down))
        #expect(try FaultKind(parsing: "slow-close=250ms") == .slowClose(.milliseconds(250)))
        var h = MachineHarness(faults: [.slowClose(.seconds(1), .down)])
        h.fin(from: .client)
        #expect(h.endings(of: .upstream) == [.fin], "the client's FIN is not held")
        h.fin(from: .upstream)
        #expect(h.endings(of: .client) == [], "the server's FIN waits")
        h.advance(by: .seconds(1))
        #expect(h.endings(of: .client) == [.fin])
    }

    @Test("slow-close holds a FIN back exactly its delay, not the bytes ahead of it")
    func slowClose() {
        var h = MachineHarness(faults: [.slowClose(.milliseconds(300))])
        h.receive("bye", from: .upstream)
        #expect(h.text(.client) == "bye")
        h.fin(from: .upstream)
        h.advance(by: .milliseconds(299))
        #expect(h.ended.isEmpty)
        h.advance(by: .milliseconds(1))
        #expect(h.endings(of: .client) == [.fin])
    }

    @Test("idle-close closes after its silence and not before; activity moves the deadline")
    func idleClose() {
        var h = MachineHarness(faults: [.idleClose(.seconds(5))])
        h.advance(by: .seconds(3))
        h.receive("ping", from: .client)
        h.advance(by: .seconds(4))
        #expect(h.ended.isEmpty, "7 s after opening, but only 4 s of silence")
        h.advance(by: .seconds(1))
        #expect(h.endings(of: .client) == [.fin])
        #expect(h.endings(of: .upstream) == [.fin])
        #expect(h.firedDetails.last == "silent for 5s")
    }

    /// 100 ms on the way down, nothing on the way up.
    static let slowDown: LinkConfiguration = {
        var link = LinkConfiguration.unimpaired
        link.down.latency = .milliseconds(100)
        return link
    }()

    @Test("latency: bytes leave exactly one delay after they arrived")
    func latency() {
        var h = MachineHarness(link: Self.slowDown)
        h.advance(by: .milliseconds(100))  // past the simulated handshake (one round trip)
        h.receive("late", from: .upstream)
        h.advance(by: .milliseconds(99))
        #expect(h.text(.client) == "")
        h.advance(by: .milliseconds(1))
        #expect(h.text(.client) == "late")
    }

    @Test("delays are reported only when asked for, per chunk the model holds back, with its delay")
    func reportedDelays() {
        var quiet = MachineHarness(link: Self.slowDown)
        quiet.receive("late", from: .upstream)
        #expect(quiet.delays.isEmpty, "nobody asked")
        var h = MachineHarness(link: Self.slowDown)
        h.machine.reportsDelays = true
        h.receive("late", from: .upstream)
        h.receive("up", from: .client)
        #expect(h.delays.count == 1, "the up direction is unimpaired: nothing held back, nothing reported")
        #expect(h.delays.first?.0 == .down)
        #expect(h.delays.first?.1 == 100_000_000)
    }

    @Test("the unimpaired, fault-free path may bypass the machine; a model, a fault or a queue ends that")
    func fastPath() {
        var h = MachineHarness()
        #expect(h.machine.canBypass(from: .client) && h.machine.canBypass(from: .upstream))
        h.machine.received(Array("x".utf8), from: .client, now: 0)
        #expect(h.machine.actions.count == 1, "read through the machine, still one write")
        if case .write(.upstream, let bytes) = h.machine.actions.first { #expect(bytes == Array("x".utf8)) } else { Issue.record("\(h.machine.actions)") }
        h.process()
        h.apply(.slowClose(.seconds(1)))
        #expect(!h.machine.canBypass(from: .client), "a fault in force")
        h.lift()
        #expect(h.machine.canBypass(from: .client))
        var link = LinkConfiguration.unimpaired
        link.up.latency = .milliseconds(1)
        h.machine.update(link: link)
        #expect(!h.machine.canBypass(from: .client), "a model on the up direction")
        #expect(h.machine.canBypass(from: .upstream), "the down direction is still plain")
        let unconnected = MachineHarness(connect: false)
        #expect(!unconnected.machine.canBypass(from: .client), "no upstream leg yet")
    }

    @Test("read cycles the executor ended itself count as delivered bytes and as activity, and act on nothing")
    func bypassedCyclesReportedLater() {
        var h = MachineHarness()
        h.machine.received(Array("x".utf8), from: .client, now: 5)
        h.process()
        h.machine.deliveredAndFlushedDirectly(from: .client, count: 1_000, lastAt: 2_000)
        h.machine.deliveredAndFlushedDirectly(from: .upstream, count: 300, lastAt: 3_000)
        #expect(h.machine.actions.isEmpty, "flushed and logged by the executor already")
        #expect(h.machine.counters.deliveredUp == 1_001)
        #expect(h.machine.counters.deliveredDown == 300)
        #expect(h.machine.lastActivityTime == 3_000)
        // A report of older cycles never moves the last activity back.
        h.machine.deliveredAndFlushedDirectly(from: .client, count: 1, lastAt: 1_000)
        #expect(h.machine.lastActivityTime == 3_000)
    }
}

/// A link that loses one segment 15 times in a row: its simulated sender gives up, and the relay
/// says so once (a `segment-loss` fault event) instead of going silent without a word.
@Suite("a sender that gives up on a lossy link")
struct GivingUpTests {
    @Test func givingUpIsLoggedOnceForTheDirectionItHappenedIn() {
        var h = MachineHarness()  // connected first: the lossy link would lose the SYN-ACKs too
        h.machine.update(link: LinkConfiguration(down: DirectionLink(loss: .bernoulli(.percent(100)))))
        h.receive("request", from: .client)
        #expect(h.text(.upstream) == "request", "the up direction is lossless")
        #expect(!h.events.contains { if case .faultFired(.segmentLoss, _) = $0 { true } else { false } })
        for _ in 0..<3 { h.receive("answer", from: .upstream) }
        let givingUp = h.events.compactMap { event -> String? in
            if case .faultFired(.segmentLoss, let detail) = event { detail } else { nil }
        }
        #expect(givingUp.count == 1, "\(h.events)")
        #expect(givingUp.first?.hasPrefix("a segment down (server → client) sent now is lost 15 times in a row: the simulated sender gives up ") == true, "\(givingUp)")
        h.advance(by: .seconds(3600))
        #expect(h.text(.client) == "")
    }

    /// A rate of zero stalls a direction forever too, but nobody gave up: nothing is said.
    @Test func aZeroRateIsNotGivingUp() {
        var h = MachineHarness()
        h.machine.update(link: LinkConfiguration(down: DirectionLink(bandwidth: DataRate(bitsPerSecond: 0))))
        h.receive("answer", from: .upstream)
        #expect(h.text(.client) == "")
        #expect(!h.events.contains { if case .faultFired(.segmentLoss, _) = $0 { true } else { false } })
    }
}
