#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Pins every thread of this process to one CPU for a measurement, and restores the mask after.
///
/// On a small virtual machine a ping-pong's round trip depends on where the scheduler happens to
/// put the threads: two threads on one vCPU hand over in a few µs, on two vCPUs each wake-up is an
/// inter-processor interrupt through the hypervisor. Pinned, the direct and relayed paths are
/// measured under the same, repeatable conditions. Threads and child processes started while
/// pinned inherit the mask.
enum CPUAffinity {
    private typealias AffinityCall = @convention(c) (pid_t, Int, UnsafeMutableRawPointer) -> Int32
    /// sched_{get,set}affinity are GNU extensions the Glibc module does not import.
    private static let calls: (get: AffinityCall, set: AffinityCall)? = {
        guard let handle = dlopen(nil, RTLD_NOW),
              let get = dlsym(handle, "sched_getaffinity"), let set = dlsym(handle, "sched_setaffinity") else { return nil }
        return (unsafeBitCast(get, to: AffinityCall.self), unsafeBitCast(set, to: AffinityCall.self))
    }()

    /// 1024 CPUs, as glibc's cpu_set_t.
    private typealias Mask = [UInt64]

    /// Runs `body` with every thread of the process pinned to `cpu`; nil (and `body` is not run)
    /// when pinning is not possible here.
    static func whilePinned<T>(to cpu: Int, _ body: () async throws -> T) async throws -> T? {
        #if !os(Linux)
        return nil  // sched_setaffinity and /proc/self/task: Linux only
        #else
        guard let calls, cpu < 64 else { return nil }
        var original = Mask(repeating: 0, count: 16)
        guard original.withUnsafeMutableBytes({ calls.get(0, $0.count, $0.baseAddress!) }) == 0 else { return nil }
        var pinned = Mask(repeating: 0, count: 16)
        pinned[0] = 1 << UInt64(cpu)
        guard apply(pinned, calls.set) else {
            _ = apply(original, calls.set)
            return nil
        }
        defer { _ = apply(original, calls.set) }
        return try await body()
        #endif
    }

    /// Sets `mask` on every thread of this process; false if any refused.
    private static func apply(_ mask: Mask, _ set: AffinityCall) -> Bool {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task") else { return false }
        var mask = mask
        var allSet = true
        for task in tasks {
            guard let tid = pid_t(task) else { continue }
            let rc = mask.withUnsafeMutableBytes { set(tid, $0.count, $0.baseAddress!) }
            if rc != 0, errno != ESRCH { allSet = false }  // ESRCH: the thread has just exited
        }
        return allSet
    }
}
