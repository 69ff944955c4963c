import NetsimCore
import NetsimFaults
import NetsimLink
import Testing

/// The buffer limit counts what a queue holds in memory, not its bytes alone: a slicer makes a
/// piece of every few bytes, each with its own keeping (QA 66: `--slice 1` held some 275 MB per
/// connection under a 4 MiB `--buffer`).
@Suite("backpressure on a sliced link")
struct SliceBackpressureTests {
    @Test func oneByteSlicesStopTheReadsLongBeforeTheirBytesReachTheLimit() {
        var h = MachineHarness(link: LinkConfiguration(down: DirectionLink(sliceSize: 1, sliceDelay: .milliseconds(1))))
        h.receive("GET / HTTP/1.1\r\n\r\n", from: .client)
        // 64 KiB of answer: 65,536 one-byte pieces, far under the 1 MiB limit in bytes.
        h.receive([UInt8](repeating: 0x61, count: 65_536), from: .upstream)
        #expect(h.readsAllowed[.upstream] == false, "the server is read no further while the pieces wait")
        // The pieces go one a millisecond; once the queue's keeping is under half the limit
        // (about 5,400 pieces), reading resumes. Every byte still arrives, in order.
        h.advance(by: .seconds(66))
        #expect(h.readsAllowed[.upstream] == true)
        #expect(h.sent[.client] == [UInt8](repeating: 0x61, count: 65_536))
    }

    @Test func wholeChunksStillFillTheLimitWithTheirBytes() {
        var h = MachineHarness(link: LinkConfiguration(down: DirectionLink(latency: .seconds(1))))
        h.receive("GET / HTTP/1.1\r\n\r\n", from: .client)
        for _ in 0..<8 { h.receive([UInt8](repeating: 0x62, count: 65_536), from: .upstream) }
        #expect(h.readsAllowed[.upstream] != false, "512 KiB of 64 KiB pieces is under the 1 MiB limit")
        for _ in 0..<8 { h.receive([UInt8](repeating: 0x62, count: 65_536), from: .upstream) }
        #expect(h.readsAllowed[.upstream] == false, "1 MiB is the limit")
    }
}
