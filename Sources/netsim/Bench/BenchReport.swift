import Foundation
import NetsimCore

/// One line of the benchmark table: measurement | result | target | verdict.
struct BenchRow: Sendable {
    var measurement: String
    var result: String
    var target: String
    var verdict: String

    /// A row that informs without a target of its own.
    static func info(_ measurement: String, _ result: String) -> BenchRow {
        BenchRow(measurement: measurement, result: result, target: "-", verdict: "-")
    }

    /// A measurement that could not be made.
    static func failed(_ measurement: String, _ error: any Error) -> BenchRow {
        BenchRow(measurement: measurement, result: "error: \(error)", target: "-", verdict: "NOT MEASURED")
    }
}

/// The rows and footnotes one part of the benchmark produced.
struct BenchSection: Sendable {
    var rows: [BenchRow] = []
    var notes: [String] = []
}

/// What every part of the benchmark needs to know.
struct BenchSettings: Sendable {
    var quick: Bool
    var connections: Int
    /// The hard limit on open files (the relay child of the rss part needs two per connection).
    var fileLimit: UInt64
    /// The `toxiproxy-server` to measure beside the relay (``ToxiproxyReference``), if any.
    var toxiproxy: String? = nil
}

// MARK: Verdicts

enum Verdict {
    /// `met`, or `MISSED by …` when `value` is above `limit`.
    static func atMost(_ value: Double, _ limit: Double, _ format: (Double) -> String) -> String {
        value <= limit ? "met" : "MISSED by \(format(value - limit))"
    }

    /// `met`, or `MISSED by …` when `value` is below `limit`.
    static func atLeast(_ value: Double, _ limit: Double, _ format: (Double) -> String) -> String {
        value >= limit ? "met" : "MISSED by \(format(limit - value))"
    }
}

// MARK: Number formatting

enum Format {
    static func fixed(_ value: Double, _ decimals: Int) -> String {
        String(format: "%.\(decimals)f", value)
    }

    /// `23.41 Gbit/s`, `998.2 Mbit/s`, `64.00 kbit/s`.
    static func rate(bitsPerSecond bps: Double) -> String {
        switch bps {
        case 1e9...: return fixed(bps / 1e9, 2) + " Gbit/s"
        case 1e6...: return fixed(bps / 1e6, 3) + " Mbit/s"
        default: return fixed(bps / 1e3, 3) + " kbit/s"
        }
    }

    /// Microseconds with one decimal: `12.3 µs`.
    static func micros(_ nanoseconds: Double) -> String { fixed(nanoseconds / 1e3, 1) + " µs" }

    /// Milliseconds with three decimals: `0.084 ms`.
    static func millis(_ nanoseconds: Double) -> String { fixed(nanoseconds / 1e6, 3) + " ms" }

    /// A duration at a precision that shows 0.5% of it: `1.2500 s` from one second up, `80.012 ms` below.
    static func seconds(_ nanoseconds: Double) -> String {
        nanoseconds >= 1e9 ? fixed(nanoseconds / 1e9, 4) + " s" : millis(nanoseconds)
    }

    /// Decimal megabytes: `41.2 MB`.
    static func megabytes(_ bytes: Double) -> String { fixed(bytes / 1e6, 1) + " MB" }

    /// What on-time release cost: `spun 31.0 ms in 20.6 s (0.150% of a core)`.
    static func spin(nanoseconds: Int64, seconds: Double) -> String {
        "spun \(millis(Double(nanoseconds))) in \(fixed(seconds, 1)) s (\(percent(Double(nanoseconds) / (seconds * 1e9), signed: false)) of a core)"
    }

    static func percent(_ fraction: Double, signed: Bool = true) -> String {
        let text = fixed(fraction * 100, 3) + "%"
        return signed && fraction >= 0 ? "+" + text : text
    }

    /// 20,000
    static func count(_ n: Int) -> String {
        let digits = String(n)
        var out = ""
        for (i, c) in digits.reversed().enumerated() {
            if i > 0, i % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return String(out.reversed())
    }
}

// MARK: The machine

enum MachineDescription {
    static var buildKind: String {
        #if DEBUG
        return "DEBUG build: these numbers say little; build with `swift build -c release --product netsim`"
        #else
        return "release build"
        #endif
    }

    static var summary: String {
        var name = utsname()
        uname(&name)
        let kernel = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let system = withUnsafeBytes(of: &name.sysname) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let machine = withUnsafeBytes(of: &name.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let memory = Double(ProcessInfo.processInfo.physicalMemory) / Double(1 << 30)
        return "\(system) \(kernel) \(machine), \(cores) cores, \(Format.fixed(memory, 1)) GiB, \(compiler)"
    }

    static var compiler: String {
        #if compiler(>=6.3)
        return "compiled with Swift ≥ 6.3"
        #elseif compiler(>=6.0)
        return "compiled with Swift 6.x"
        #else
        return "compiled with Swift < 6"
        #endif
    }
}
