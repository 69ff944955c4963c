import Foundation

/// A process's line in `/proc/<pid>/stat`, the fields netsim reads from it. The command's name
/// comes in parentheses and may hold spaces and parentheses itself, so the fields are counted
/// from after its last `)`: the state is field 3. Linux only: nil where there is no /proc.
public struct ProcessStat: Sendable {
    /// Fields 3 on (the state first).
    private let fields: [Substring]

    /// The process `pid`'s, nil when it does not exist (or there is no /proc).
    public init?(pid: Int32) {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return nil }
        self.init(text)
    }

    /// Parsed from the text of a stat file.
    public init?(_ text: String) {
        guard let close = text.lastIndex(of: ")") else { return nil }
        fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 2 else { return nil }
    }

    /// `R`, `S`, `D`, `Z` (a zombie: ended, not yet reaped), `X` (dead), ….
    public var state: Character? { fields[0].first }
    /// Field 5: the process group.
    public var processGroup: Int32? { Int32(fields[2]) }
    /// Field 22: when the process started, in clock ticks after boot.
    public var startTime: UInt64? { fields.count > 19 ? UInt64(fields[19]) : nil }
    /// Not ended: neither a zombie nor dead.
    public var isLive: Bool { state != "Z" && state != "X" }

    /// Whether process `pid` exists and has not ended (a zombie has).
    public static func isLive(_ pid: Int32) -> Bool {
        ProcessStat(pid: pid)?.isLive ?? false
    }
}
