import Foundation

/// How busy the whole machine was between two readings of /proc/stat, to tell whether a
/// throughput measurement was limited by CPU (every process counts: client, relay, server, socat).
struct CPUMeter {
    private let busy: Int
    private let total: Int

    init() {
        (busy, total) = CPUMeter.read()
    }

    /// Whether the machine's CPU time can be read: /proc/stat is Linux only (elsewhere the
    /// readings are zero and reports say "not measured").
    static let available = ProcFS.readable("/proc/stat")

    /// Busy CPU seconds since `self` (all cores) and the busy fraction of the machine.
    func elapsed() -> (busySeconds: Double, busyFraction: Double) {
        let (busyNow, totalNow) = CPUMeter.read()
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let busyTicks = Double(busyNow - busy)
        let totalTicks = Double(totalNow - total)
        return (busyTicks / ticks, totalTicks > 0 ? busyTicks / totalTicks : 0)
    }

    /// (busy, total) jiffies over all CPUs: the `cpu` line of /proc/stat; idle and iowait are not busy.
    private static func read() -> (Int, Int) {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") }) else { return (0, 0) }
        let values = line.split(separator: " ").dropFirst().compactMap { Int($0) }
        guard values.count >= 5 else { return (0, 0) }
        let total = values.prefix(8).reduce(0, +)
        let idle = values[3] + values[4]
        return (total - idle, total)
    }
}
