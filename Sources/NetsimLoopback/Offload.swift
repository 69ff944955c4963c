import Foundation

/// Runs blocking work (socket calls) on a thread of its own and awaits the result, so async
/// code never parks Swift's small cooperative thread pool in recv(2).
public func offload<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
