#if canImport(Glibc)
import Glibc
import NetsimLoopback
import Synchronization
import Testing
@testable import netsim

/// The packet part's readings of its tools' output, and its verdicts (the measurements
/// themselves belong to `netsim bench --only packet`, not to timed tests).
@Suite("bench: the packet part's parsing and its iperf3 client")
struct PacketBenchTests {
    @Test func iperf3sJSONGivesTheReceiversRate() throws {
        let json = #"{"start":{},"end":{"sum_sent":{"bits_per_second":2.5e6},"sum_received":{"bits_per_second":1342000.5}}}"#
        #expect(try PacketBench.receivedBitsPerSecond(iperfJSON: json) == 1342000.5)
        // iperf3 3.12 with -J exits 0 when its test cannot start, with this JSON.
        let refused = #"{"start":{"connected":[]},"intervals":[],"end":{},"error":"unable to connect to server: Connection refused"}"#
        #expect { try PacketBench.receivedBitsPerSecond(iperfJSON: refused) } throws: { error in
            "\(error)".contains("unable to connect to server: Connection refused")
        }
    }

    @Test func anIperf3ClientWaitsForItsServerAndRetriesARunThatCouldNotStart() async throws {
        let server = try LoopbackServer { _ in }
        defer { server.stop() }
        #expect(ProcFS.isListening(port: server.endpoint.port, on: "127.0.0.1") == true)
        #expect(ProcFS.isListening(port: server.endpoint.port, on: "127.0.0.2") == false, "127.0.0.1's listener is not 127.0.0.2's")
        let runs = Mutex(0)
        let bps = try await PacketBench.iperfClient(serverPort: server.endpoint.port, host: "127.0.0.1") {
            let run = runs.withLock { $0 += 1; return $0 }
            return run == 1 ? #"{"end":{},"error":"the server is busy running a test. try again later"}"#
                            : #"{"end":{"sum_received":{"bits_per_second":8e9}}}"#
        }
        #expect(bps == 8e9)
        #expect(runs.withLock { $0 } == 2)
    }

    /// /proc/net/tcp is read to its end: with 200 more sockets open it is far larger than the
    /// first page Foundation's file readers return (about 27 lines), so most listeners would be
    /// missed.
    @Test func everyListenerIsFoundAmongHundredsOfSockets() throws {
        let listeners = (0..<200).map { _ in socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0) }
        defer { for fd in listeners { close(fd) } }
        var ports: [Int] = []
        for fd in listeners {
            let port = Self.bindLoopback(fd, listening: true)
            try #require(port != nil, "socket \(ports.count): errno \(errno)")
            ports.append(port!)
        }
        // Every 4th: each look reads the whole table.
        let asked = stride(from: 0, to: ports.count, by: 4).map { ports[$0] }
        let missed = asked.filter { ProcFS.isListening(port: $0) != true }
        #expect(missed.isEmpty, "\(missed.count) of \(asked.count) listeners not found: \(missed)")
    }

    /// Binds `fd` to a free loopback port (and listens, if asked); its port, or nil.
    static func bindLoopback(_ fd: Int32, listening: Bool) -> Int? {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && (!listening || listen(fd, 1) == 0) && getsockname(fd, $0, &length) == 0
            }
        }
        return bound ? Int(UInt16(bigEndian: address.sin_port)) : nil
    }

    @Test func anIperf3ClientSaysWhenItsServerNeverListens() async throws {
        // A port bound and never listened on, held for the whole test: a free port's number
        // alone was taken by another test's server during a batch's stall, which then listened.
        // Asked of 127.0.0.1 only: a socket on another address can have the same number (a
        // clean-clone CI run found one listening: another test's server on 127.0.0.2 or ::1).
        let held = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(held) }
        let port = try #require(Self.bindLoopback(held, listening: false))
        #expect(ProcFS.isListening(port: port, on: "127.0.0.1") == false)
        let runs = Mutex(0)
        await #expect { try await PacketBench.iperfClient(serverPort: port, host: "127.0.0.1", listenTimeout: 0.1) { runs.withLock { $0 += 1 }; return "{}" } } throws: { error in
            "\(error)".contains("did not listen on port \(port)")
        }
        #expect(runs.withLock { $0 } == 0)
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
