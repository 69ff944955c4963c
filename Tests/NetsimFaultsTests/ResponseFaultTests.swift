import NetsimCore
import NetsimFaults
import Testing

/// The faults that act on an answer (garbage, empty, cut), driven through the machine.
@Suite("Faults on the answer")
struct ResponseFaultTests {
    static let request = "GET /feed HTTP/1.1\r\nHost: x\r\n\r\n"
    static let head = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"
    static let body = String(repeating: "0123456789", count: 10)

    @Test("garbage: the request reaches upstream; the client gets N seeded random bytes, then FIN both ways")
    func garbage() {
        var h = MachineHarness(faults: [.garbage(bytes: 64)])
        h.receive(Self.request, from: .client)
        #expect(h.text(.upstream) == Self.request)
        h.receive(Self.head + Self.body, from: .upstream)
        #expect(h.sent[.client]?.count == 64)
        #expect(h.text(.client) != String((Self.head + Self.body).prefix(64)))
        #expect(h.endings(of: .client) == [.fin])
        #expect(h.endings(of: .upstream) == [.fin])
        // Later bytes from upstream are swallowed, and logged under the fault that closed (QA 55:
        // the answer's first read was `garbage`'s, its second `closing`'s).
        h.receive("more", from: .upstream)
        #expect(h.sent[.client]?.count == 64)
        let drops = h.events.compactMap { if case .dropped(.down, let n, let fault) = $0 { "\(fault) \(n)" } else { nil } }
        #expect(drops == ["garbage \((Self.head + Self.body).utf8.count)", "garbage 4"])

        var same = MachineHarness(faults: [.garbage(bytes: 64)])
        same.receive(Self.request, from: .client)
        same.receive(Self.head, from: .upstream)
        #expect(same.sent[.client] == h.sent[.client], "the same seed sends the same bytes")
        var other = MachineHarness(faults: [.garbage(bytes: 64)], seed: 8)
        other.receive(Self.request, from: .client)
        other.receive(Self.head, from: .upstream)
        #expect(other.sent[.client] != h.sent[.client], "another seed, other bytes")
    }

    @Test("empty: the request reaches upstream; the client gets a clean close and no byte")
    func empty() {
        var h = MachineHarness(faults: [.empty])
        h.receive(Self.request, from: .client)
        #expect(h.text(.upstream) == Self.request)
        #expect(h.ended.isEmpty, "nothing happens before the server answers")
        h.receive(Self.head + Self.body, from: .upstream)
        #expect(h.sent[.client] == [])
        #expect(h.endings(of: .client) == [.fin])
        #expect(h.events.contains { if case .dropped(.down, let n, "empty") = $0 { n == (Self.head + Self.body).utf8.count } else { false } })
    }

    @Test("cut: the answer stops after N bytes of its body, the head split across reads", arguments: [CloseKind.fin, .rst])
    func cut(how: CloseKind) {
        var h = MachineHarness(faults: [.cut(bytes: 25, how)])
        h.receive(Self.request, from: .client)
        let answer = Array((Self.head + Self.body).utf8)
        // The head's "\r\n\r\n" is split over two reads, the body over three.
        for piece in [answer[0..<30], answer[30..<40], answer[40..<60], answer[60...]] {
            h.receive(Array(piece), from: .upstream)
        }
        #expect(h.text(.client) == Self.head + String(Self.body.prefix(25)))
        #expect(h.endings(of: .client) == [how])
    }

    @Test("cut on a kept-alive connection: a shorter answer passes whole, the next is cut after BYTES of its own body, in one chunk or many")
    func cutFollowsAnswers() {
        let short = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
        let long = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + Self.body
        // Split inside the first head, and across the two answers (Character counts: "\r\n" is one).
        for pieces in [[short + long], [short, long], [String(short.prefix(20)), String(short.dropFirst(20)) + String(long.prefix(50)), String(long.dropFirst(50))]] {
            var h = MachineHarness(faults: [.cut(bytes: 25, .fin)])
            h.receive(Self.request, from: .client)
            for piece in pieces { h.receive(piece, from: .upstream) }
            let longHead = String(long.dropLast(Self.body.count))
            #expect(h.text(.client) == short + longHead + String(Self.body.prefix(25)), "\(pieces.count) pieces")
            #expect(h.endings(of: .client) == [.fin])
        }
    }

    /// A TLS stream passed through (or any answer that is not HTTP/1) has no body to count:
    /// `cut` sat armed, said nothing, and the whole download went through.
    @Test("cut on an answer that is not HTTP/1 passes it whole and says why", arguments: [[0x16, 0x03, 0x03, 0x00, 0x40], Array("SSH-2.0-OpenSSH\r\n".utf8), Array("HTTX".utf8)])
    func cutOnAnAnswerThatIsNotHTTP(_ start: [UInt8]) {
        var h = MachineHarness(faults: [.cut(bytes: 10)])
        h.receive(Self.request, from: .client)
        let rest = [UInt8](repeating: 0x41, count: 500)
        h.receive(start, from: .upstream)
        h.receive(rest, from: .upstream)
        #expect(h.ended.isEmpty)
        #expect(h.sent[.client] == start + rest)
        #expect(h.firedDetails.contains { $0.contains("so it has no body to count: nothing done on this connection") }, "\(h.firedDetails)")
    }

    @Test("cut at 0 delivers the head and nothing of the body")
    func cutAtZero() {
        var h = MachineHarness(faults: [.cut(bytes: 0)])
        h.receive(Self.request, from: .client)
        h.receive(Self.head, from: .upstream)
        #expect(h.text(.client) == Self.head)
        #expect(h.ended.isEmpty)
        h.receive(Self.body, from: .upstream)
        #expect(h.text(.client) == Self.head)
        #expect(h.endings(of: .client) == [.fin])
    }

    @Test("limit at 0 closes on the first byte from upstream (it used to swallow without closing)")
    func limitZero() {
        var h = MachineHarness(faults: [.limit(bytes: 0)])
        h.receive(Self.request, from: .client)
        h.receive(Self.head, from: .upstream)
        #expect(h.sent[.client] == [])
        #expect(h.endings(of: .client) == [.fin])
    }

    /// Toxiproxy's limit_data on the upstream stream: the client's bytes are counted, the
    /// server's pass (`limit=BYTES,up`).
    @Test("limit=BYTES,up counts what the client sends, and closes after it")
    func limitUp() throws {
        #expect(try FaultCatalog.parse("limit=10,up") == .limit(bytes: 10, .up))
        #expect(try FaultCatalog.parse("limit=10,down") == .limit(bytes: 10))
        #expect(FaultKind.limit(bytes: 10, .up).description == "limit=10,up")
        var h = MachineHarness(faults: [.limit(bytes: 10, .up)])
        h.receive(Self.head, from: .upstream)
        #expect(h.text(.client) == Self.head, "the server's bytes pass")
        h.receive(Self.request, from: .client)
        #expect(h.text(.upstream) == String(Self.request.prefix(10)))
        #expect(h.endings(of: .upstream) == [.fin])
    }
}
