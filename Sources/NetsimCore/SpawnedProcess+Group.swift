#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// The process group of a child that leads one (``SpawnedProcess/leadsGroup``): what it started
/// and left behind. An exec client may be a shell script that runs the real client without
/// `exec`, or a client that starts helpers; signalled alone, the script died and the real client
/// ran on, orphaned, while the report said netsim had terminated it (QA 62).
extension SpawnedProcess {
    /// Sends `signal` to every process in the child's group, the child too while it runs; to the
    /// child alone when it leads no group. Safe after the child was reaped: Linux does not give
    /// a pid that still names a process group to a new process.
    public func signalGroup(_ signal: Int32) {
        guard leadsGroup else { return send(signal) }
        kill(-pid, signal)
    }

    /// The live processes in the child's group other than the child (zombies aside), from /proc;
    /// where there is no /proc, one placeholder entry (0) while the group has any member.
    public func groupMembers() -> [pid_t] {
        guard leadsGroup else { return [] }
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else {
            return kill(-pid, 0) == 0 ? [0] : []
        }
        return entries.compactMap { entry -> pid_t? in
            guard let member = pid_t(entry), member != pid, let stat = ProcessStat(pid: member),
                  stat.isLive, stat.processGroup == pid else { return nil }
            return member
        }.sorted()
    }

    /// Ends what the child left in its group once it has exited: SIGTERM, then SIGKILL for what
    /// is still there after `patience`. Returns what it found and the last signal it sent (nil:
    /// the group was empty). Polls every 20 ms while it waits.
    public func endGroup(patience: Duration = .seconds(1)) async -> (members: [pid_t], signal: Int32)? {
        let members = groupMembers()
        guard !members.isEmpty else { return nil }
        signalGroup(SIGTERM)
        let deadline = ContinuousClock.now + patience
        while ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
            if groupMembers().isEmpty { return (members, SIGTERM) }
        }
        signalGroup(SIGKILL)
        return (members, SIGKILL)
    }
}
