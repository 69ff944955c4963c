import Foundation
import Testing
@testable import netsim

/// The progress block of long runs: its lines for a state, and when it is drawn at all.
@Suite("progress on a terminal")
struct ProgressTests {
    @Test func linesForAState() {
        var state = ProgressState(title: "netsim test", total: 30)
        #expect(ProgressRenderer.lines(state, elapsed: 0.25, width: 80) == ["netsim test · 0.2s · 0/30 done"])
        state.passed = 11
        state.failed = 1
        state.running = [.init(label: "lockscreen [naive]", started: 58), .init(label: "loss [resilient]", started: 61.4)]
        #expect(ProgressRenderer.lines(state, elapsed: 62.4, width: 80) == [
            "netsim test · 1m 02s · 12/30 done: 11 passed, 1 failed",
            "  ▶ lockscreen [naive]  4.4s",
            "  ▶ loss [resilient]  1.0s",
        ])
    }

    @Test func manyRunningAreCountedAndLongLinesCut() {
        var state = ProgressState(title: "netsim test", total: 20)
        state.running = (1...9).map { .init(label: "scenario-\($0)", started: 0) }
        let lines = ProgressRenderer.lines(state, elapsed: 1, width: 80)
        #expect(lines.count == 1 + ProgressRenderer.maximumRunningLines + 1)
        #expect(lines.last == "  … and 3 more running")
        let narrow = ProgressRenderer.lines(state, elapsed: 1, width: 12)
        #expect(narrow.allSatisfy { $0.count <= 12 }, "\(narrow)")
        #expect(narrow[0] == "netsim test…")
    }

    @Test func drawnOnlyForAPersonAtATerminal() {
        #expect(ProgressDisplay.wanted(isTTY: true, environment: ["TERM": "xterm-256color"]))
        #expect(!ProgressDisplay.wanted(isTTY: false, environment: ["TERM": "xterm-256color"]), "a pipe")
        #expect(!ProgressDisplay.wanted(isTTY: true, environment: ["TERM": "xterm", "CI": "true"]), "CI")
        #expect(!ProgressDisplay.wanted(isTTY: true, environment: ["TERM": "xterm", "CI": "1"]), "CI")
        #expect(ProgressDisplay.wanted(isTTY: true, environment: ["TERM": "xterm", "CI": "false"]))
        #expect(!ProgressDisplay.wanted(isTTY: true, environment: ["TERM": "dumb"]), "a dumb terminal")
    }
}
