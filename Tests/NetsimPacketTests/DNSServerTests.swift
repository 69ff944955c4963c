import Foundation
import NetsimCore
import NetsimDNS
import NetsimLoopback
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// netsim's DNS server on loopback, asked over real UDP and TCP sockets (no root needed).
@Suite struct DNSServerTests {
    static func server(_ faults: DNSFaults = .none, maximumWaiting: Int = 10_000) throws -> (DNSServer, port: Int, log: EventLog) {
        var zone = DNSZone(faults: faults)
        zone.add("api.test", address: [198, 18, 0, 1])
        let log = EventLog()
        let server = DNSServer(zone: zone, eventLog: log, maximumWaiting: maximumWaiting)
        return (server, try server.start(host: "127.0.0.1", port: 0), log)
    }

    /// One datagram to 127.0.0.1:`port`, and the answer (nil when none comes within `timeout`).
    static func udp(_ query: [UInt8], port: Int, timeout: Duration = .seconds(5)) throws -> [UInt8]? {
        try udp([query], port: port, timeout: timeout).first
    }

    /// The datagrams sent at once from one socket; the answers that come within `timeout`.
    static func udp(_ queries: [[UInt8]], port: Int, timeout: Duration) throws -> [[UInt8]] {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        #expect(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        for query in queries {
            let sent = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, query, query.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            #expect(sent == query.count)
        }
        let deadline = ContinuousClock.now + timeout
        var answers: [[UInt8]] = []
        while answers.count < queries.count, ContinuousClock.now < deadline {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let wait = max(0, Int32((deadline - ContinuousClock.now) / .milliseconds(1)))
            guard poll(&poller, 1, wait) == 1 else { break }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = recv(fd, &buffer, buffer.count, 0)
            if count > 0 { answers.append(Array(buffer.prefix(count))) }
        }
        return answers
    }

    @Test func answersOverUDPAndTCPAndRecordsEachQueryAndAnswer() throws {
        let (server, port, log) = try Self.server()
        defer { server.stop() }
        let answer = try DNSMessage(decoding: try #require(try Self.udp(DNSMessageTests.query("api.test", .a, id: 7).encoded(), port: port)))
        #expect(answer.id == 7 && answer.isResponse && answer.rcode == .noError)
        #expect(answer.answers.map(\.addressText) == ["198.18.0.1"])

        let socket = try BlockingSocket.connect(to: Endpoint(host: "127.0.0.1", port: port))
        defer { socket.close() }
        // Two queries in one write: both answered, each framed with its length.
        var frames: [UInt8] = []
        for query in [DNSMessageTests.query("api.test", .a, id: 8), DNSMessageTests.query("nope.test", .a, id: 9)] {
            let bytes = query.encoded()
            frames += [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes
        }
        try socket.send(frames)
        var codes: [UInt16: DNSResponseCode] = [:]
        for _ in 0..<2 {
            let length = try socket.receive(exactly: 2)
            let message = try DNSMessage(decoding: try socket.receive(exactly: Int(length[0]) << 8 | Int(length[1])))
            codes[message.id] = message.rcode
        }
        #expect(codes == [8: .noError, 9: .nameError])

        log.flush()
        let answers = log.events.compactMap { event -> String? in
            if case .dnsAnswer(let name, _, let result, _) = event.kind { return "\(name) \(result)" } else { return nil }
        }
        #expect(answers.sorted() == ["api.test 198.18.0.1", "api.test 198.18.0.1", "nope.test NXDOMAIN"])
        #expect(log.events.filter { if case .dnsQuery(_, _, let transport) = $0.kind { transport == "tcp" } else { false } }.count == 2)
        #expect(server.counters.queries == 3 && server.counters.answered == 2 && server.counters.nxdomain == 1)
    }

    @Test func aMalformedQueryGetsFORMERRAndGarbageGetsNothing() throws {
        let (server, port, _) = try Self.server()
        defer { server.stop() }
        let header: [UInt8] = [0xAB, 0xCD, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]
        let reply = try DNSMessage(decoding: try #require(try Self.udp(header + [0xC0, 12], port: port)))
        #expect(reply.id == 0xABCD && reply.rcode == .formatError)
        #expect(try Self.udp([1, 2, 3], port: port, timeout: .milliseconds(300)) == nil)
        // Still serving.
        #expect(try Self.udp(DNSMessageTests.query("api.test", .a).encoded(), port: port) != nil)
    }

    @Test func theDelayHoldsEachAnswerAndTimeoutAnswersNothing() throws {
        let (server, port, log) = try Self.server(DNSFaults(delay: .milliseconds(300)))
        let start = ContinuousClock.now
        let answer = try Self.udp(DNSMessageTests.query("api.test", .a).encoded(), port: port)
        let elapsed = ContinuousClock.now - start
        server.stop()
        #expect(answer != nil)
        #expect(elapsed >= .milliseconds(300) && elapsed < .seconds(5), "answered after \(elapsed)")
        log.flush()
        let after = log.events.compactMap { event -> Int64? in
            if case .dnsAnswer(_, _, _, let after) = event.kind { return after } else { return nil }
        }
        #expect(after.count == 1 && after[0] >= 300_000_000)

        let (silent, silentPort, _) = try Self.server(DNSFaults(failure: .timeout))
        defer { silent.stop() }
        #expect(try Self.udp(DNSMessageTests.query("api.test", .a).encoded(), port: silentPort, timeout: .milliseconds(500)) == nil)
        #expect(silent.counters.unanswered == 1)
    }

    @Test func answersWaitingOutTheDelayAreBounded() throws {
        let (server, port, log) = try Self.server(DNSFaults(delay: .milliseconds(400)), maximumWaiting: 2)
        defer { server.stop() }
        // Three queries at once: two wait out the delay, the third is dropped.
        let queries = (1...3).map { DNSMessageTests.query("api.test", .a, id: UInt16($0)).encoded() }
        let answers = try Self.udp(queries, port: port, timeout: .milliseconds(1500))
        #expect(answers.count == 2)
        #expect(server.counters.unanswered == 1 && server.counters.answered == 2, "\(server.counters)")
        log.flush()
        #expect(log.events.contains { if case .dnsAnswer(_, _, let result, _) = $0.kind { result.hasPrefix("dropped (2 answers") } else { false } })
    }
}
