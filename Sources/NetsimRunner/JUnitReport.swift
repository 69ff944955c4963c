import Foundation

/// `--junit`: JUnit XML as CI systems read it: one test case per scenario.
public enum JUnitReport {
    public struct Case: Sendable {
        public var name: String
        public var file: String
        public var seconds: Double
        /// nil when it passed.
        public var failure: String?
        /// The `<failure>`'s `message`: what failed, in a line. The failure's first line when nil
        /// (a run's report starts with its checks in order, passed ones too).
        public var message: String?
        /// `<system-out>`: e.g. the report of a failure the matrix baseline expects.
        public var output: String?
        /// JUnit's `<error>`: netsim could not run it (a harness problem, not the client's
        /// failure); CI systems show the two apart.
        public var error: String?
        /// JUnit's `<skipped>`, with why: not run here (a packet link without root), so CI's count
        /// of tests does not change between runners (QA 58: skipped scenarios vanished).
        public var skipped: String?
        public init(name: String, file: String, seconds: Double, failure: String?, message: String? = nil, output: String? = nil,
                    error: String? = nil, skipped: String? = nil) {
            self.message = message
            self.name = name
            self.file = file
            self.seconds = seconds
            self.failure = failure
            self.output = output
            self.error = error
            self.skipped = skipped
        }

        /// Failed, or could not run.
        public var didNotPass: Bool { failure != nil || error != nil }
    }

    /// When and where a suite ran, for `<testsuite>`'s `timestamp`, `hostname` and `time` (the
    /// wall time: the cases' times add up to more when runs overlap, `--jobs`).
    public struct Run: Sendable {
        public var started: Date
        public var seconds: Double
        public var hostname: String
        public init(started: Date, seconds: Double, hostname: String = ProcessInfo.processInfo.hostName) {
            self.started = started
            self.seconds = seconds
            self.hostname = hostname
        }

        /// `2026-11-28T08:40:12`, as JUnit's schema has it (no zone: UTC here).
        var timestamp: String {
            let format = DateFormatter()
            format.locale = Locale(identifier: "en_US_POSIX")
            format.timeZone = TimeZone(identifier: "UTC")
            format.dateFormat = "yyyy-MM-dd'T'HH:mm:ss"
            return format.string(from: started)
        }
    }

    /// A case's `classname`: its file as a dotted path without `.scn` (`Scenarios.lockscreen`),
    /// the form pytest writes, which Jenkins splits at the last dot into package and class (the
    /// file itself put every case in a class `scn`, QA 58). The file is in `file`.
    static func className(of file: String) -> String {
        var path = Substring(file)
        if path.hasSuffix(".scn") { path = path.dropLast(4) }
        return path.split(separator: "/").filter { $0 != "." && !$0.isEmpty }.joined(separator: ".")
    }

    /// With a matrix baseline, one test case per matrix cell instead of one per run: it fails
    /// when the cell differs from the baseline — so CI's test view agrees with the exit status —
    /// and carries the first failed run's report (as `<failure>` or, when the baseline expects
    /// that failure, as `<system-out>`). `cells[i]` is the (scenario row, driver column) of `runs[i]`.
    public static func cells(_ runs: [Case], cells: [(scenario: String, driver: String)], comparison: MatrixComparison) -> [Case] {
        var order: [String] = []
        var grouped: [String: (scenario: String, driver: String, runs: [Case])] = [:]
        for (run, cell) in zip(runs, cells) {
            let name = "\(cell.scenario) [\(cell.driver)]"
            if grouped[name] == nil {
                order.append(name)
                grouped[name] = (cell.scenario, cell.driver, [])
            }
            grouped[name]!.runs.append(run)
        }
        return order.map { name in
            let group = grouped[name]!
            let failed = group.runs.filter(\.didNotPass)
            let tally = "\(group.runs.count - failed.count) of \(group.runs.count) runs passed"
            let report = failed.first.map { "first failed run, \($0.name):\n\($0.failure ?? $0.error ?? "")" }
            let difference = comparison.cellDifferences[group.scenario]?[group.driver]
            return Case(
                name: name, file: group.runs[0].file, seconds: group.runs.reduce(0) { $0 + $1.seconds },
                failure: difference.map { ([$0, tally] + (report.map { [$0] } ?? [])).joined(separator: "\n\n") },
                output: difference == nil ? (["matches the matrix baseline; \(tally)"] + (report.map { [$0] } ?? [])).joined(separator: "\n\n") : nil)
        }
    }

    /// A failed run's `message`: how many checks failed, and the first.
    public static func message(for result: RunResult) -> String? {
        guard let first = result.failures.first else { return nil }
        return "\(result.failures.count) of \(result.verdicts.count) check\(result.verdicts.count == 1 ? "" : "s") failed\(TextReport.policyNote(result)), first: \(first.title)"
    }

    /// `run`: when, where and how long the suite ran; without it `time` is the cases' sum.
    public static func render(_ cases: [Case], suiteName: String = "netsim", run: Run? = nil) -> String {
        let failures = cases.filter { $0.failure != nil }.count
        let errors = cases.filter { $0.failure == nil && $0.error != nil }.count
        let skipped = cases.filter { !$0.didNotPass && $0.skipped != nil }.count
        let total = run?.seconds ?? cases.reduce(0) { $0 + $1.seconds }
        let when = run.map { #" timestamp="\#($0.timestamp)" hostname="\#(escape($0.hostname))""# } ?? ""
        var xml = #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n"
        xml += #"<testsuites name="\#(escape(suiteName))" tests="\#(cases.count)" failures="\#(failures)" errors="\#(errors)" skipped="\#(skipped)" time="\#(format(total))">"# + "\n"
        xml += #"  <testsuite name="\#(escape(suiteName))" tests="\#(cases.count)" failures="\#(failures)" errors="\#(errors)" skipped="\#(skipped)" time="\#(format(total))"\#(when)>"# + "\n"
        for item in cases {
            let open = #"    <testcase classname="\#(escape(className(of: item.file)))" name="\#(escape(item.name))" file="\#(escape(item.file))" time="\#(format(item.seconds))""#
            if !item.didNotPass, let reason = item.skipped {
                xml += open + ">\n"
                xml += #"      <skipped message="\#(escape(reason))"/>"# + "\n"
                xml += "    </testcase>\n"
            } else if item.failure == nil, let error = item.error {
                let firstLine = error.split(separator: "\n").first.map(String.init) ?? "could not run"
                xml += open + ">\n"
                xml += #"      <error message="\#(escape(firstLine))">\#(escape(error))</error>"# + "\n"
                xml += "    </testcase>\n"
            } else if let failure = item.failure {
                let firstLine = item.message ?? failure.split(separator: "\n").first.map(String.init) ?? "failed"
                xml += open + ">\n"
                xml += #"      <failure message="\#(escape(firstLine))">\#(escape(failure))</failure>"# + "\n"
                if let output = item.output { xml += "      <system-out>\(escape(output))</system-out>\n" }
                xml += "    </testcase>\n"
            } else if let output = item.output {
                xml += open + ">\n"
                xml += "      <system-out>\(escape(output))</system-out>\n"
                xml += "    </testcase>\n"
            } else {
                xml += open + "/>\n"
            }
        }
        xml += "  </testsuite>\n</testsuites>\n"
        return xml
    }

    static func format(_ seconds: Double) -> String { String(format: "%.3f", seconds) }

    static func escape(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            // Not characters XML 1.0 allows (C0 controls but tab and newline, U+FFFE, U+FFFF):
            // one would make the whole report unreadable to a CI's parser.
            case _ where scalar.value < 0x20 && scalar != "\n" && scalar != "\t": out += "?"
            case "\u{FFFE}", "\u{FFFF}": out += "?"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
