import CNetsimAllocator

/// glibc's allocator, set for a relay that holds the bytes it delays.
///
/// Why: a delayed or shaped direction keeps each read's buffer (up to 256 KiB) until the bytes are
/// released, so its buffers are never the one NIO reuses read after read. With glibc's defaults a
/// buffer of 128 KiB or more is first mmap'd, and a heap's free top goes back to the kernel
/// (`madvise`) past a threshold glibc adjusts as it goes — so the pages of released buffers were
/// returned and faulted in again by the next reads: through `netsim relay --latency 1ms` (iperf3,
/// 128 KiB writes) 250–270 thousand page faults a second, 10.7–15.2 Gbit/s at 0.83 s of CPU per
/// GB; with the thresholds below none, 17.2–17.6 Gbit/s at 0.61 s/GB. Fixed values also stop
/// glibc's adjustment. The cost: up to ``trimThreshold`` of freed memory per heap stays with the
/// process (measured: ~2 MB more RSS). An unimpaired connection is not affected (NIO's reused
/// buffer). Not applied when the user chose the allocator's settings (``userChose(_:)``).
/// docs/benchmarks.md, "Held buffers and the allocator".
enum MallocTuning {
    /// Freed memory at the top of a heap up to this stays in the process.
    static let trimThreshold: Int32 = 32 << 20
    /// Allocations below this come from the heaps (reused), not from their own mapping.
    static let mmapThreshold: Int32 = 4 << 20

    /// glibc's older variables for the same settings (mallopt(3), "ENVIRONMENT").
    static let thresholdVariables: Set<String> = ["MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_"]

    /// Whether the environment already configures glibc's allocator: any `glibc.malloc.` tunable
    /// (so `GLIBC_TUNABLES=glibc.malloc.check=0` keeps glibc's defaults), or a threshold variable.
    static func userChose(_ environment: [String: String]) -> Bool {
        environment["GLIBC_TUNABLES"]?.contains("glibc.malloc.") == true
            || !thresholdVariables.isDisjoint(with: environment.keys)
    }

    /// Sets both thresholds, unless the user chose (or the C library is not glibc). Whether they
    /// were set.
    @discardableResult
    static func apply(environment: [String: String]) -> Bool {
        guard !userChose(environment) else { return false }
        return cnetsim_allocator_keep_freed_memory(trimThreshold, mmapThreshold) == 0
    }
}
