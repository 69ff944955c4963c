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

    @Test("latency: bytes leave exactly one delay after they arrived")
    func latency() {
        var link = LinkConfiguration.unimpaired
        link.down.latency = .milliseconds(100)
        var h = MachineHarness(link: link)
        h.receive("late", from: .upstream)
        h.advance(by: .milliseconds(99))
        #expect(h.text(.client) == "")
        h.advance(by: .milliseconds(1))
        #expect(h.text(.client) == "late")
    }

    @Test("the unimpaired, fault-free path writes each read straight through, one action")
    func fastPath() {
        var h = MachineHarness()
        h.machine.received(Array("x".utf8), from: .client, now: 0)
        #expect(h.machine.actions.count == 1)
        if case .write(.upstream, let bytes) = h.machine.actions.first { #expect(bytes == Array("x".utf8)) } else { Issue.record("\(h.machine.actions)") }
    }
}
