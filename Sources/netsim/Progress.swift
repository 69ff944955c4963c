import Foundation

/// Where a long run stands (`netsim test`, a client matrix, `netsim bench`): what is running,
/// since when, and the verdicts so far. A value, so the renderer is a pure function of it.
struct ProgressState: Equatable {
    struct Running: Equatable {
        var label: String
        /// Seconds since the run started.
        var started: Double
    }

    var title: String
    var total: Int
    var passed = 0
    var failed = 0
    var running: [Running] = []

    var done: Int { passed + failed }
}

/// The lines of the progress block for a state, at most `width` columns each (a longer line
/// would wrap, and the block could no longer be redrawn in place).
///
///     netsim test · 1m 02s · 12/30 done: 11 passed, 1 failed
///       ▶ lockscreen [naive]  4.2s
///       ▶ loss [resilient]  1.0s
enum ProgressRenderer {
    /// Running items shown one per line; the rest are counted.
    static let maximumRunningLines = 6

    static func lines(_ state: ProgressState, elapsed: Double, width: Int) -> [String] {
        var summary = "\(state.title) · \(duration(elapsed)) · \(state.done)/\(state.total) done"
        if state.done > 0 { summary += ": \(state.passed) passed, \(state.failed) failed" }
        var lines = [summary]
        for item in state.running.prefix(maximumRunningLines) {
            lines.append("  ▶ \(item.label)  \(duration(max(0, elapsed - item.started)))")
        }
        if state.running.count > maximumRunningLines {
            lines.append("  … and \(state.running.count - maximumRunningLines) more running")
        }
        return lines.map { fit($0, width: width) }
    }

    /// `4.2s`, `1m 02s`.
    static func duration(_ seconds: Double) -> String {
        if seconds < 60 { return String(format: "%.1fs", seconds) }
        let whole = Int(seconds)
        return String(format: "%dm %02ds", whole / 60, whole % 60)
    }

    static func fit(_ line: String, width: Int) -> String {
        guard width > 1, line.count > width else { return line }
        return String(line.prefix(width - 1)) + "…"
    }
}
