import NetsimCore
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Shows a ``ProgressState`` on a terminal, redrawn in place below the lines a command prints
/// (which go through ``emit(_:)``). Only for a person watching: on a pipe, in CI (`CI` set) or
/// on a dumb terminal it draws nothing and ``emit(_:)`` is a plain print, so logs and reports
/// are what they always were.
// `@unchecked Sendable`: all state is behind `lock`; jobs finish on any task.
final class ProgressDisplay: @unchecked Sendable {
    let enabled: Bool
    private let lock = NSLock()
    private var state: ProgressState
    private let start = ContinuousClock.now
    private var shownLines = 0
    private var ticker: Task<Void, Never>?
    /// Set by ``stop()``: a redraw already on its way (the ticker's, a job finishing on another
    /// task) must not draw the block again after it was removed for the summary.
    private var stopped = false

    init(title: String, total: Int, enabled: Bool = ProgressDisplay.wanted()) {
        self.state = ProgressState(title: title, total: total)
        self.enabled = enabled
        if enabled {
            // Only the elapsed times change between events: a redraw twice a second is enough.
            ticker = Task { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(500))
                    self?.redraw()
                }
            }
        }
    }

    /// Whether progress is wanted: standard output is a terminal, not in CI, not a dumb terminal.
    static func wanted(isTTY: Bool = isatty(STDOUT_FILENO) == 1, environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        guard isTTY else { return false }
        if let ci = environment["CI"], !ci.isEmpty, ci.lowercased() != "false", ci != "0" { return false }
        return environment["TERM"] != "dumb"
    }

    func started(_ label: String) {
        update { $0.running.append(.init(label: label, started: self.elapsed)) }
    }

    func finished(_ label: String, passed: Bool) {
        update {
            if let index = $0.running.firstIndex(where: { $0.label == label }) { $0.running.remove(at: index) }
            if passed { $0.passed += 1 } else { $0.failed += 1 }
        }
    }

    /// Prints `text` (and a newline) above the progress block.
    func emit(_ text: String) {
        guard !Interruption.isUnderWay else { return }  // a run the interruption failed is not a verdict
        guard enabled else {
            print(text)
            return
        }
        lock.withLock {
            write(clearing() + text + "\n" + (stopped ? "" : drawing()))
        }
    }

    /// Removes the block for good (before the summary).
    func stop() {
        ticker?.cancel()
        guard enabled else { return }
        lock.withLock {
            stopped = true
            write(clearing())
            shownLines = 0
        }
    }

    private var elapsed: Double {
        let d = ContinuousClock.now - start
        return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    private func update(_ change: (inout ProgressState) -> Void) {
        lock.withLock { change(&state) }
        redraw()
    }

    private func redraw() {
        guard enabled else { return }
        lock.withLock {
            guard !stopped else { return }
            write(clearing() + drawing())
        }
    }

    /// Erases the lines drawn last (the cursor sits at the end of the block's last line).
    private func clearing() -> String {
        guard shownLines > 0 else { return "" }
        var out = "\r\u{1B}[2K"
        for _ in 1..<shownLines { out += "\u{1B}[1A\u{1B}[2K" }
        shownLines = 0
        return out
    }

    private func drawing() -> String {
        let lines = ProgressRenderer.lines(state, elapsed: elapsed, width: Self.terminalWidth())
        shownLines = lines.count
        return lines.joined(separator: "\n")
    }

    private func write(_ text: String) {
        StandardStream.output.write(text)
    }

    /// Columns of the terminal on standard output.
    static func terminalWidth() -> Int {
        #if os(Linux)
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        #endif
        // Darwin's TIOCGWINSZ is a macro Swift cannot import: there, COLUMNS or 80.
        return Int(ProcessInfo.processInfo.environment["COLUMNS"] ?? "") ?? 80
    }
}
