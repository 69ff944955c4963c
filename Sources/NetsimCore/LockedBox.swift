import Foundation

/// A value only reachable with its lock held: this module's counterpart of NIO's
/// `NIOLockedValueBox` (NetsimCore stays free of NIO, and `Synchronization.Mutex` needs
/// macOS 15). Types that keep their mutable state in one of these are checked `Sendable`.
final class LockedBox<Value> {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    /// Runs `body` with the lock held. Keep it short, and never call back into code that may
    /// take the same lock (`NSLock` is not recursive).
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

// Unchecked because the compiler cannot see that `value` is only reached through `withLock`.
extension LockedBox: @unchecked Sendable where Value: Sendable {}
