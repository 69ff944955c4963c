import NetsimCore
import NetsimDNS
import Testing

/// The DNS codec and zone as pure values: no sockets.
@Suite struct DNSMessageTests {
    /// A query as glibc sends it: ID, RD, one question.
    static func query(_ name: String, _ type: DNSType, id: UInt16 = 0x1234) -> DNSMessage {
        DNSMessage(id: id, questions: [DNSQuestion(name: name, type: type)])
    }

    @Test func aQueryEncodesToTheBytesOfRFC1035AndBack() throws {
        let bytes = Self.query("api.test", .a).encoded()
        #expect(bytes == [0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0,
                          3, 0x61, 0x70, 0x69, 4, 0x74, 0x65, 0x73, 0x74, 0, 0, 1, 0, 1])
        #expect(try DNSMessage(decoding: bytes) == Self.query("api.test", .a))
    }

    @Test func aResponseRoundTripsWithEveryFlagAndSection() throws {
        var message = Self.query("Api.Test", .aaaa).response(
            rcode: .noError, answers: [.address(name: "Api.Test", bytes: [0x20, 0x01, 0, 2] + [UInt8](repeating: 0, count: 11) + [1], ttl: 7)])
        message.recursionAvailable = true
        message.authority = [DNSRecord(name: "test", type: DNSType(rawValue: 6), ttl: 60, data: [1, 2, 3])]
        message.additional = [DNSRecord(name: "", type: .opt, dnsClass: 1232, ttl: 0, data: [])]
        let decoded = try DNSMessage(decoding: message.encoded())
        #expect(decoded == message)
        #expect(decoded.isResponse && decoded.isAuthoritative && decoded.recursionDesired)
        #expect(decoded.answers.first?.addressText == "2001:2::1")
    }

    @Test func theAnswersNameIsAPointerToTheQuestionsAndPointersAreFollowedOnRead() throws {
        let response = Self.query("www.example.test", .a).response(rcode: .noError, answers: [
            .address(name: "www.example.test", bytes: [198, 18, 0, 1], ttl: 0),
            .address(name: "mail.example.test", bytes: [198, 18, 0, 1], ttl: 0),
        ])
        let bytes = response.encoded()
        let questionEnd = 12 + 18 + 4
        // The first answer's name: two bytes, 0xC00C (offset 12, the question's name).
        #expect(Array(bytes[questionEnd..<questionEnd + 2]) == [0xC0, 0x0C])
        // The second: "mail" then a pointer to "example.test" inside the question (offset 16).
        let second = questionEnd + 2 + 10 + 4
        #expect(Array(bytes[second..<second + 7]) == [4, 0x6D, 0x61, 0x69, 0x6C, 0xC0, 16])
        #expect(try DNSMessage(decoding: bytes) == response)
    }

    @Test func malformedMessagesAreErrorsNotCrashes() {
        let good = Self.query("api.test", .a).encoded()
        // Every truncation of a good message.
        for length in 0..<good.count {
            #expect(throws: DNSDecodingError.self) { try DNSMessage(decoding: Array(good.prefix(length))) }
        }
        #expect(throws: DNSDecodingError.trailingBytes(1)) { try DNSMessage(decoding: good + [0]) }
        let header: [UInt8] = [0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0]
        // A pointer to itself, and a pointer forward: both refused (no loop).
        #expect(throws: DNSDecodingError.badPointer(12)) { try DNSMessage(decoding: header + [0xC0, 12, 0, 1, 0, 1]) }
        #expect(throws: DNSDecodingError.badPointer(20)) { try DNSMessage(decoding: header + [0xC0, 20, 0, 1, 0, 1]) }
        // Two pointers pointing at each other: the second points forward.
        #expect(throws: DNSDecodingError.self) {
            try DNSMessage(decoding: [0, 1, 1, 0, 0, 2, 0, 0, 0, 0, 0, 0] + [0xC0, 18, 0, 1, 0, 1] + [0xC0, 12, 0, 1, 0, 1])
        }
        #expect(throws: DNSDecodingError.badLabelType(0x40)) { try DNSMessage(decoding: header + [0x40, 0, 0, 1, 0, 1]) }
        // A name over 255 bytes.
        let label: [UInt8] = [63] + [UInt8](repeating: 0x61, count: 63)
        let long: [UInt8] = (0..<5).flatMap { _ in label } + [0]
        #expect(throws: DNSDecodingError.nameTooLong) { try DNSMessage(decoding: header + long + [0, 1, 0, 1]) }
        // Counts that promise more than the bytes hold fail before anything is reserved.
        #expect(throws: DNSDecodingError.truncated) { try DNSMessage(decoding: [0, 1, 1, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0]) }
        // Random bytes: errors or messages, never a crash.
        var random = SeededRandom(seed: 53)
        for _ in 0..<2000 {
            let count = Int(random.next() % 64)
            let bytes = header + (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            _ = try? DNSMessage(decoding: bytes)
        }
    }

    @Test func aResponseTooBigForUDPGoesOutTruncatedWithTC() throws {
        let many = (0..<40).map { DNSRecord.address(name: "big.test", bytes: [198, 18, 0, UInt8($0)], ttl: 0) }
        let response = Self.query("big.test", .a).response(rcode: .noError, answers: many)
        #expect(response.encoded().count > DNSMessage.udpLimit)
        let sent = try DNSMessage(decoding: response.fittingUDP())
        #expect(sent.isTruncated && sent.answers.isEmpty && sent.questions == response.questions)
        #expect(try DNSMessage(decoding: Self.query("api.test", .a).response(rcode: .noError).fittingUDP()).isTruncated == false)
    }

    @Test func theZoneAnswersItsNamesAndNXDOMAINForTheRest() {
        var zone = DNSZone()
        zone.add("API.test.", address: [198, 18, 0, 1])
        zone.add("api.test", address: [0x20, 0x01, 0, 2] + [UInt8](repeating: 0, count: 11) + [1])
        let a = zone.decide(Self.query("api.TEST", .a))
        #expect(a.response?.rcode == .noError && a.result == "198.18.0.1" && a.delay == .zero)
        #expect(a.response?.answers.first?.ttl == 0)
        #expect(zone.decide(Self.query("api.test", .aaaa)).result == "2001:2::1")
        #expect(zone.decide(Self.query("api.test", .https)).result == "NODATA")
        #expect(zone.decide(Self.query("other.test", .a)).response?.rcode == .nameError)
        zone.add("*.cdn.test", address: [198, 18, 0, 1])
        #expect(zone.decide(Self.query("img.cdn.test", .a)).result == "198.18.0.1")
        #expect(zone.decide(Self.query("a.b.CDN.test", .a)).result == "198.18.0.1")
        #expect(zone.decide(Self.query("cdn.test", .a)).response?.rcode == .nameError)
        var twoQuestions = Self.query("api.test", .a)
        twoQuestions.questions.append(DNSQuestion(name: "b.test", type: .a))
        #expect(zone.decide(twoQuestions).response?.rcode == .formatError)
        var notify = Self.query("api.test", .a)
        notify.opcode = 4
        #expect(zone.decide(notify).response?.rcode == .notImplemented)
        #expect(zone.decide(Self.query("api.test", .a).response(rcode: .noError)).response == nil)
    }

    @Test func theZonesFaultsDelayAndFailEveryName() {
        var zone = DNSZone(faults: DNSFaults(delay: .seconds(3)))
        zone.add("api.test", address: [198, 18, 0, 1])
        #expect(zone.decide(Self.query("api.test", .a)).delay == .seconds(3))
        #expect(zone.decide(Self.query("nope.test", .a)).delay == .seconds(3))
        for (failure, rcode) in [(DNSFailure.nxdomain, DNSResponseCode.nameError), (.servfail, .serverFailure)] {
            zone.faults = DNSFaults(delay: .seconds(1), failure: failure)
            let decision = zone.decide(Self.query("api.test", .a))
            #expect(decision.response?.rcode == rcode && decision.delay == .seconds(1))
            #expect(decision.result.contains("--dns-fail \(failure.rawValue)"))
        }
        zone.faults = DNSFaults(failure: .timeout)
        let silent = zone.decide(Self.query("api.test", .a))
        #expect(silent.response == nil && silent.result.contains("timeout"))
    }

    @Test func mappingsParseNamesAndTargets() throws {
        #expect(try DNSMapping(parsing: "API.test.=host") == DNSMapping(name: "api.test", target: .host))
        #expect(try DNSMapping(parsing: "a.test=198.18.0.1").target == .address("198.18.0.1"))
        #expect(try DNSMapping(parsing: "a.test=2001:2::1").target == .address("2001:2::1"))
        #expect(try DNSMapping(parsing: "*.cdn.test=host").name == "*.cdn.test")
        for bad in ["api.test", "=host", "api..test=host", "api.test=", "a b=host", "api.test=somewhere", "*=host", "a.*.test=host"] {
            #expect(throws: UnitParseError.self, "\(bad)") { try DNSMapping(parsing: bad) }
        }
        #expect(DNSMapping.addressBytes("198.18.0.1") == [198, 18, 0, 1])
        #expect(DNSMapping.addressBytes("2001:2::1")?.count == 16)
        #expect(DNSMapping.addressBytes("1.2.3") == nil)
    }
}
