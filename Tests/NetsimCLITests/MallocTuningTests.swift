import Testing
@testable import netsim

/// The executable's allocator settings: set on glibc unless the user chose their own.
@Suite struct MallocTuningTests {
    @Test func theUsersOwnAllocatorSettingsAreLeftAlone() {
        #expect(MallocTuning.userChose(["GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1048576"]))
        #expect(MallocTuning.userChose(["GLIBC_TUNABLES": "glibc.malloc.check=0"]))
        #expect(MallocTuning.userChose(["MALLOC_TRIM_THRESHOLD_": "1048576"]))
        #expect(MallocTuning.userChose(["MALLOC_MMAP_THRESHOLD_": "65536"]))
        #expect(!MallocTuning.userChose(["GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX2"]))
        #expect(!MallocTuning.userChose(["PATH": "/usr/bin", "MALLOC_ARENA_MAX": "2"]))
        #expect(!MallocTuning.apply(environment: ["GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=65536"]))
    }

    /// The C shim really reaches mallopt(3) on this (glibc) machine. Sets in this test process
    /// what every netsim process sets at start.
    @Test func theThresholdsAreSetOnGlibc() {
        #if canImport(Glibc)
        #expect(MallocTuning.apply(environment: [:]))
        #endif
    }
}
