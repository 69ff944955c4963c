#if canImport(Glibc)
import Testing
@testable import netsim

/// The packet part's readings of its tools' output, and its verdicts (the measurements
/// themselves belong to `netsim bench --only packet`, not to timed tests).
@Suite("bench: the packet part's parsing")
struct PacketBenchTests {
    @Test func iperf3sJSONGivesTheReceiversRate() throws {
        let json = #"{"start":{},"end":{"sum_sent":{"bits_per_second":2.5e6},"sum_received":{"bits_per_second":1342000.5}}}"#
        #expect(try PacketBench.receivedBitsPerSecond(iperfJSON: json) == 1342000.5)
        #expect(throws: (any Error).self) { try PacketBench.receivedBitsPerSecond(iperfJSON: #"{"error":"unable to connect"}"#) }
    }

    @Test func theDownloadClientsLineIsBitsPerSecond() throws {
        #expect(try PacketBench.goodput("125000 1000000000\n") == 1_000_000)
        #expect(throws: (any Error).self) { try PacketBench.goodput("closed") }
    }

    @Test func delayErrorsAreJudgedAtTheirP99() {
        let good = PacketBench.errorRows(Array(repeating: 100_000, count: 99) + [150_000], label: "x", samples: 100, base: "b")
        #expect(good.last?.verdict == "met")
        let late = PacketBench.errorRows(Array(repeating: 100_000, count: 90) + Array(repeating: 900_000, count: 10), label: "x", samples: 100, base: "b")
        #expect(late.last?.verdict.hasPrefix("MISSED") == true, "\(late)")
    }
}
#endif
