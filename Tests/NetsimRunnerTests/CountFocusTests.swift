@testable import NetsimRunner
import NetsimScenario
import Testing

/// Where a failed count check's timeline is shown (QA 64: at the first event or the window's
/// start, far from what failed).
@Suite("Count checks: the moment the report shows")
struct CountFocusTests {
    @Test func pastAMaximumTheFirstOneTooMany() {
        #expect(ExpectationJudge.focus(on: [10, 1_000, 2_000], range: CountRange(maximum: 1), from: nil) == 1_000)
        #expect(ExpectationJudge.focus(on: [10, 1_000, 2_000], range: .exactly(2), from: 5) == 2_000)
    }

    @Test func shortOfAMinimumAfterTheLastOneSeen() {
        #expect(ExpectationJudge.focus(on: [10, 400], range: CountRange(minimum: 5), from: 0) == 400)
        #expect(ExpectationJudge.focus(on: [], range: CountRange(minimum: 1), from: 5_000) == 5_000)
    }

    @Test func aPassShowsTheStart() {
        #expect(ExpectationJudge.focus(on: [10, 400], range: CountRange(minimum: 1, maximum: 3), from: 7) == 7)
        #expect(ExpectationJudge.focus(on: [10, 400], range: CountRange(minimum: 1, maximum: 3), from: nil) == 10)
    }
}
