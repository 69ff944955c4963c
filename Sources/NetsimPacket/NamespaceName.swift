import Foundation
import NetsimCore

/// The names a shell gives to what it creates, made so that a later netsim can tell its own
/// leftovers from anything else and know whether their owner is still alive.
///
/// Namespace: `netsim-<pid>-<start>-<n>`, where start is the owner's start time in clock ticks
/// after boot (field 22 of /proc/<pid>/stat): a pid alone may have been reused by an unrelated
/// process since the owner died. Devices: `nsim<pid>h<n>` (host side) and `nsim<pid>c<n>`
/// (namespace side), within IFNAMSIZ; being non-persistent TUN devices they never outlive
/// their owner, so they need no liveness check.
public struct NamespaceName: Equatable, Sendable, CustomStringConvertible {
    public static let prefix = "netsim-"

    public var pid: Int32
    public var startTime: UInt64
    /// Which shell of this process (cycles through 0..<100).
    public var index: Int

    public init(pid: Int32, startTime: UInt64, index: Int) {
        self.pid = pid
        self.startTime = startTime
        self.index = index
    }

    /// nil for a name netsim did not make.
    public init?(parsing name: String) {
        guard name.hasPrefix(Self.prefix) else { return nil }
        let parts = name.dropFirst(Self.prefix.count).split(separator: "-")
        guard parts.count == 3, let pid = Int32(parts[0]), let start = UInt64(parts[1]), let index = Int(parts[2]) else { return nil }
        self.init(pid: pid, startTime: start, index: index)
    }

    public var description: String { "\(Self.prefix)\(pid)-\(startTime)-\(index)" }
    public var hostDevice: String { "nsim\(pid)h\(index)" }
    public var clientDevice: String { "nsim\(pid)c\(index)" }

    /// The start time of process `pid` in clock ticks after boot; nil when it does not exist or
    /// has ended (a zombie: dead, only not yet reaped by its parent).
    public static func startTime(of pid: Int32) -> UInt64? {
        guard let stat = ProcessStat(pid: pid), stat.isLive else { return nil }
        return stat.startTime
    }

    /// True while the process that made this name runs.
    public var ownerIsAlive: Bool { Self.startTime(of: pid) == startTime }
}
