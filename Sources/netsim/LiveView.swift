import Foundation
import NetsimCore
import NetsimRunner
import NetsimScenario

/// What `netsim run` shows while a scenario runs: each step as it fires, each request as it
/// finishes, and on a terminal a progress line while nothing else happens.
final class LiveView: RunObserver, @unchecked Sendable {
    private let lock = NSLock()
    private let tty: Bool
    private var lastOutput = ContinuousClock.now
    private var runStart = ContinuousClock.now
    private var inFlight = 0
    private var progressShown = false
    private var ticker: Task<Void, Never>?

    init(tty: Bool = isatty(STDOUT_FILENO) == 1) { self.tty = tty }

    func started(_ scenario: Scenario, driver: String, relay: Endpoint, seed: UInt64) {
        emit("netsim run \(scenario.file): \(scenario.name)")
        if let sentence = Self.firstSentence(of: scenario.description) { emit("  \(sentence)") }
        let path = scenario.linkMode == .packet ? "packet link, in a namespace, to \(relay)" : "relay \(relay)"
        emit("  client: \(driver) · \(path) · link: \(scenario.appliedLinkDescription) · seed \(seed)")
        lock.withLock { runStart = .now }
        if tty { startTicker() }
    }

    func stepFired(_ step: TimelineStep, at nanoseconds: Int64, description: String) {
        emit("\(stamp(nanoseconds))  ▶ \(description)")
    }

    /// Counted as it starts: a step's requests wait their turn (`parallel`, `every`), and the
    /// progress line said all of them were in flight from the step on.
    func requestStarted(name: String, index: Int) {
        lock.withLock { inFlight += 1 }
    }

    func requestFinished(_ outcome: RequestOutcome) {
        lock.withLock { inFlight -= 1 }
        let mark = outcome.response.error == nil ? "✓" : "✗"
        emit("\(stamp(outcome.finished))    \(mark) \(outcome.label): \(outcome.summary)")
    }

    /// Stops the progress line before the verdicts are printed.
    func finish() {
        ticker?.cancel()
        clearProgress()
    }

    private func stamp(_ ns: Int64) -> String { TimelineStamp.format(ns) }

    /// The description's first sentence, on one line.
    static func firstSentence(of text: String) -> String? {
        let flat = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
        guard !flat.isEmpty else { return nil }
        if let end = flat.range(of: ". ") { return String(flat[..<end.lowerBound]) + "." }
        return flat
    }

    /// The live lines go straight to the file descriptor, the verdicts through `print`'s buffer
    /// (a full buffer on a pipe): what `print` holds goes first, or several clients' runs came
    /// out in a heap, each verdict after every run's live lines and cut mid-word.
    private func flushPrinted() { fflush(nil) }

    private func emit(_ line: String) {
        guard !Interruption.isUnderWay else { return }
        lock.withLock {
            flushPrinted()
            if progressShown { StandardStream.output.write("\r\u{1B}[2K") }
            progressShown = false
            lastOutput = .now
            StandardStream.output.write(line + "\n")
        }
    }

    private func clearProgress() {
        lock.withLock {
            flushPrinted()
            if progressShown { StandardStream.output.write("\r\u{1B}[2K") }
            progressShown = false
        }
    }

    private func startTicker() {
        ticker = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(250))
                self?.tick()
            }
        }
    }

    private func tick() {
        lock.withLock {
            guard ContinuousClock.now - lastOutput >= .seconds(1) else { return }
            let elapsed = ContinuousClock.now - runStart
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            let waiting = inFlight > 0 ? "\(inFlight) request\(inFlight == 1 ? "" : "s") in flight" : "waiting for the next step"
            flushPrinted()
            StandardStream.output.write("\r\u{1B}[2K  \(String(format: "%.1f", seconds))s … \(waiting)")
            progressShown = true
        }
    }
}

/// Scenario times as the live view prints them: `   4.012s`.
enum TimelineStamp {
    static func format(_ ns: Int64) -> String {
        // `-0.000s` for an instant just before the run's start (the seed is logged first).
        let text = String(format: "%.3fs", max(0, Double(ns) / 1e9))
        return String(repeating: " ", count: max(0, 9 - text.count)) + text
    }
}
