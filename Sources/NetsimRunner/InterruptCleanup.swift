import NIOConcurrencyHelpers

/// What must still happen when `netsim run` or `netsim test` is interrupted (Ctrl-C, SIGTERM)
/// in the middle of a run: its pcap closed, so the capture so far is a whole file (it was cut at
/// the writer's buffer, 8 KiB, and unreadable), and its exec client told to stop (SIGTERM; one
/// that reads no stdin outlived netsim). Parts register while they run and unregister when
/// they stop normally; the command's signal handler runs what is left, once, then exits.
public enum InterruptCleanup {
    private static let actions = NIOLockedValueBox<(next: UInt64, pending: [UInt64: @Sendable () -> Void])>((0, [:]))

    /// Registers `action`; returns the key that ``unregister(_:)`` takes.
    public static func register(_ action: @escaping @Sendable () -> Void) -> UInt64 {
        actions.withLockedValue {
            $0.next += 1
            $0.pending[$0.next] = action
            return $0.next
        }
    }

    public static func unregister(_ key: UInt64) {
        _ = actions.withLockedValue { $0.pending.removeValue(forKey: key) }
    }

    /// Runs every registered action, newest first, and forgets them; returns how many ran.
    @discardableResult
    public static func runAll() -> Int {
        let pending = actions.withLockedValue { state in
            defer { state.pending = [:] }
            return state.pending.sorted { $0.key > $1.key }.map(\.value)
        }
        for action in pending { action() }
        return pending.count
    }
}
