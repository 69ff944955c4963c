import Dispatch
import Foundation
import NetsimCore

/// State that threads change and async code waits on, for tests that must wait for something
/// to happen without sleeping.
///
/// ``wait(within:until:)`` resumes as soon as its condition holds: the condition is checked
/// when the wait starts and again on every ``update(_:)``, never on a timer. The deadline is a
/// Dispatch timer, so a waiting task holds no thread (Swift's cooperative pool has one per
/// core, two on a small CI machine, and a blocked one stalls every other test's timers).
///
/// ```swift
/// let lines = Waitable<[String]>([])
/// handle.readabilityHandler = { lines.update { $0.append(...) } }
/// let ready = await lines.wait(within: .seconds(10)) { $0.first { $0.hasPrefix("ready") } }
/// ```
// `@unchecked Sendable`: every stored property is reached only with `lock` held.
public final class Waitable<State>: @unchecked Sendable {
    private let lock = NSLock()
    private var state: State
    /// Each waiter's check: true once it has resumed its task (then it is removed).
    private var waiters: [UInt64: (inout State) -> Bool] = [:]
    /// Each waiter's way out at its deadline or on cancellation.
    private var abandon: [UInt64: () -> Void] = [:]
    private var nextID: UInt64 = 0

    public init(_ initial: State) {
        state = initial
    }

    /// The state now.
    public var value: State { lock.withLock { state } }

    /// Changes the state, then resumes every waiter whose condition now holds. `change` and the
    /// conditions run with a lock held: keep them quick.
    public func update(_ change: (inout State) -> Void) {
        lock.withLock {
            change(&state)
            for (id, check) in waiters where check(&state) {
                waiters[id] = nil
                abandon[id] = nil
            }
        }
    }

    /// Waits until `condition` returns a value (it may also consume from the state, as a queue's
    /// reader does), and returns it; nil if `timeout` passes first or the task is cancelled.
    public func wait<Result: Sendable>(
        within timeout: Duration, until condition: @escaping (inout State) -> Result?
    ) async -> Result? {
        let id = lock.withLock {
            nextID += 1
            return nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result?, Never>) in
                lock.withLock {
                    if let result = condition(&state) {
                        continuation.resume(returning: result)
                        return
                    }
                    waiters[id] = { state in
                        guard let result = condition(&state) else { return false }
                        continuation.resume(returning: result)
                        return true
                    }
                    abandon[id] = { continuation.resume(returning: nil) }
                }
                DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(timeout.nanoseconds))) { [self] in
                    giveUp(id)
                }
                if Task.isCancelled { giveUp(id) }
            }
        } onCancel: {
            giveUp(id)
        }
    }

    /// Resumes waiter `id` with nil, unless it has already been resumed.
    private func giveUp(_ id: UInt64) {
        let resume: (() -> Void)? = lock.withLock {
            waiters[id] = nil
            return abandon.removeValue(forKey: id)
        }
        resume?()
    }
}
