import Foundation
import NetsimCore
import NetsimLoopback
import Testing
@testable import NetsimPcap

/// Empty, truncated, corrupt and non-pcap files: a clear error, never a crash.
@Suite("bad capture files")
struct BadInputTests {
    static func write(_ bytes: [UInt8], _ name: String) throws -> String {
        let path = temporaryPath(name)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func eachKindOfBadFileGetsItsOwnClearError() throws {
        let fixtureBytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: fixture("zeek-http-get.pcap"))))
        let cases: [(String, [UInt8]?, PcapError.Kind, String)] = [
            ("empty.pcap", [], .truncated, "empty"),
            ("text.pcap", Array("this is not a capture\n".utf8), .notACapture, "not a pcap or pcapng"),
            ("header-only.pcap", Array(fixtureBytes.prefix(10)), .truncated, "truncated"),
            ("cut-first-packet.pcap", Array(fixtureBytes.prefix(60)), .truncated, "truncated"),
            ("missing.pcap", nil, .cannotOpen, "cannot open"),
            ("gzipped.pcap.gz", [0x1F, 0x8B, 0x08, 0x00] + [UInt8](repeating: 0, count: 40), .notACapture, "it is gzip-compressed; libpcap reads captures uncompressed: gunzip -k"),
        ]
        for (name, bytes, kind, words) in cases {
            let path = bytes == nil ? temporaryPath(name) : try Self.write(bytes!, name)
            defer { try? FileManager.default.removeItem(atPath: path) }
            do {
                _ = try Capture.load(path: path)
                Issue.record("\(name) loaded")
            } catch let error as PcapError {
                #expect(error.kind == kind, "\(name): \(error)")
                #expect(error.message.contains(path) && error.message.contains(words), "\(name): \(error)")
            }
        }
        let folder = temporaryPath("folder")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        #expect(throws: PcapError.self) { try Capture.load(path: folder) }
    }

    /// A capture cut in the middle of a packet (tcpdump killed while it wrote, a full disk)
    /// was refused whole (QA 65); tshark reads the packets before the cut, and so does netsim,
    /// saying where the file ends.
    @Test func aFileCutAfterWholePacketsIsReadUpToTheCut() throws {
        let whole = try Capture.load(path: fixture("zeek-http-get.pcap"))
        let fixtureBytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: fixture("zeek-http-get.pcap"))))
        let path = try Self.write(Array(fixtureBytes.prefix(3000)), "cut-after-whole-packets.pcap")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let cut = try Capture.load(path: path)
        #expect(cut.packetCount > 0 && cut.packetCount < whole.packetCount, "\(cut.packetCount) of \(whole.packetCount)")
        #expect(cut.endsCut?.hasPrefix("libpcap: truncated dump file") == true, "\(cut.endsCut ?? "nil")")
        #expect(cut.notes.first == "the file ends in the middle of a packet, after \(cut.packetCount) whole ones, which are used (\(cut.endsCut!); a capture stopped while it wrote leaves this)", "\(cut.notes)")
        #expect(whole.endsCut == nil && !whole.notes.contains { $0.contains("ends in the middle") })
    }

    /// A packet stamped 10 s back (a clock stepped while the capture ran) made a round trip of
    /// −9.9 s and a gap that began before the flow (QA 65): both are left out, with a note.
    @Test func aPacketStampedBackInTimeMakesNoNegativeRoundTripOrGap() throws {
        let builder = try CaptureBuilder(path: temporaryPath("stamped-back.pcap"))
        defer { try? FileManager.default.removeItem(atPath: builder.path) }
        let request = [UInt8](text: "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        builder.write([segment(clientEnd, serverEnd, seq: 0, flags: .syn)])
        builder.advance(100_000_000)
        builder.write([segment(serverEnd, clientEnd, seq: 0, ack: 1, flags: [.syn, .ack])])
        builder.advance(100_000)
        builder.write([segment(clientEnd, serverEnd, seq: 1, ack: 1, flags: .ack), segment(clientEnd, serverEnd, seq: 1, ack: 1, request)])
        builder.advance(-10_000_000_000)
        builder.write([segment(serverEnd, clientEnd, seq: 1, ack: 1 + UInt32(request.count), flags: .ack)])
        builder.advance(10_050_000_000)
        builder.write([segment(serverEnd, clientEnd, seq: 1, ack: 1 + UInt32(request.count), [UInt8](text: "HTTP/1.1 204 No Content\r\n\r\n"))])
        builder.close()
        let capture = try Capture.load(path: builder.path)
        let profile = FlowProfile(try #require(capture.flows.first))
        #expect(capture.stampedBackwards == 1)
        #expect(capture.notes.contains { $0.hasPrefix("1 packet is stamped earlier than a packet before it") }, "\(capture.notes)")
        #expect(profile.toServer.ackRTT.allSatisfy { $0 >= 0 } && profile.handshakeRTT.map { $0 >= 0 } ?? true, "\(profile.toServer.ackRTT)")
        #expect(profile.idleGaps.allSatisfy { $0.start >= 0 }, "\(profile.idleGaps)")
        // Below the first line, which names the file (its temporary name has digits after dashes).
        let report = ProfileReport.text([profile], capture: capture).split(separator: "\n").dropFirst().joined(separator: "\n")
        #expect(report.range(of: #"(^|[\s(])-[0-9]"#, options: .regularExpression) == nil, "no negative time: \(report)")
    }

    /// A capture whose snaplen cut the HTTP messages has server data but nothing whole to
    /// replay: the error said "the selected flows carry no server data".
    @Test func aReplayOfCutPacketsSaysTheSnaplenCutThem() throws {
        let builder = try CaptureBuilder(path: temporaryPath("cut-http.pcap"))
        defer { try? FileManager.default.removeItem(atPath: builder.path) }
        let request = Array("GET /a HTTP/1.1\r\nHost: example.com\r\nUser-Agent: curl\r\n\r\n".utf8)
        let answer = Array("HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n".utf8) + [UInt8](repeating: 0x41, count: 500)
        builder.write([segment(clientEnd, serverEnd, seq: 1, flags: .syn)])
        builder.write([segment(clientEnd, serverEnd, seq: 2, request)], captureLength: 40 + 20)
        builder.write([segment(serverEnd, clientEnd, seq: 1, answer)], captureLength: 40 + 20)
        builder.close()
        #expect {
            try ReplayPlan(capture: Capture.load(path: builder.path))
        } throws: { error in
            "\(error)".contains("no whole HTTP message to replay: the capture's snaplen (60 bytes) cut 2 TCP segments short")
        }
    }

    /// A valid pcapng whose interfaces differ in link type (mergecap of an Ethernet and a cooked
    /// capture) was called "damaged"; it is a limit of libpcap, with a way around it.
    @Test func interfacesOfDifferentLinkTypesAreNotCalledDamaged() throws {
        func le32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.littleEndian, Array.init) }
        func le16(_ value: UInt16) -> [UInt8] { withUnsafeBytes(of: value.littleEndian, Array.init) }
        let section = le32(0x0A0D_0D0A) + le32(28) + le32(0x1A2B_3C4D) + le16(1) + le16(0) + [UInt8](repeating: 0xFF, count: 8) + le32(28)
        func interface(_ linkType: UInt16) -> [UInt8] { le32(1) + le32(20) + le16(linkType) + le16(0) + le32(262_144) + le32(20) }
        let path = try Self.write(section + interface(1) + interface(113), "two-link-types.pcapng")
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect {
            try Capture.load(path: path)
        } throws: { error in
            let message = "\(error)"
            return (error as? PcapError)?.kind == .unsupportedLinkType && message.contains("its interfaces have different link types")
                && message.contains("frame.interface_id == 0") && !message.contains("damaged")
                && message.hasSuffix("; then give netsim the part (the same with 1 for interface 1, and so on)")
        }
    }

    /// The way around works as written: the hint's own commands, run with interface 0's link type
    /// for TYPE, make a pcap netsim reads (QA 52: its one-step hint left a file libpcap refused
    /// the same way). The capture is made with Wireshark's tools: a raw-IP copy of an Ethernet
    /// fixture merged with the fixture.
    @Test func theHintForSeveralLinkTypesWorksAsWritten() async throws {
        let folder = temporaryPath("split")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        func sh(_ command: String) async throws -> WatchedProcess.Result {
            try await WatchedProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", command], directory: URL(fileURLWithPath: folder)).result(within: .seconds(60))
        }
        let made = try await sh("editcap -C 14 -T rawip \(fixture("zeek-http-get.pcap")) raw.pcap && mergecap -F pcapng -w 'two kinds.pcapng' raw.pcap \(fixture("zeek-http-get.pcap"))")
        try #require(made.status == 0, "editcap/mergecap (ci/setup installs them with tshark): \(made.standardError)")
        let message = try #require(throws: PcapError.self) { try Capture.load(path: "\(folder)/two kinds.pcapng") }.message
        let recipe = try #require(message.split(separator: "for interface 0: ").last?.split(separator: ", TYPE").first)
        #expect(!recipe.contains("-w '\(folder)/two kinds.pcapng'"), "the input named as an output: \(recipe)")
        let split = try await sh(recipe.replacingOccurrences(of: " TYPE ", with: " rawip "))
        #expect(split.status == 0, "\(recipe): \(split.standardError)")
        let capture = try Capture.load(path: "\(folder)/two kinds-if0.pcap")
        #expect(!capture.flows.isEmpty, "\(message)")
    }

    @Test func anUnsupportedLinkTypeIsNamed() throws {
        let path = temporaryPath("usb.pcap")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try PcapFileWriter(path: path, linkType: 189)  // USB Linux
        writer.write([1, 2, 3, 4], nanoseconds: 1)
        writer.close()
        #expect {
            try Capture.load(path: path)
        } throws: { error in
            (error as? PcapError).map { $0.kind == .unsupportedLinkType && $0.message.contains("USB") } ?? false
        }
    }

    /// Truncations at many offsets and seeded byte flips of every fixture: each mutant either
    /// loads (and replay and profile then run on it) or fails with a PcapError, and none costs
    /// much more than its intact original.
    @Test func mutatedFixturesNeverCrash() async throws {
        // CPU-bound for seconds: on a thread of its own, not one of Swift concurrency's few.
        try await offload {
            var random = SeededRandom(seed: 2024)
            var loaded = 0
            var refused = 0
            var mutants = 0
            let path = temporaryPath("mutant.pcap")
            defer { try? FileManager.default.removeItem(atPath: path) }
            /// Loads `bytes` and runs profile and replay on them; returns the CPU seconds spent.
            func examine(_ bytes: [UInt8]) throws -> Double {
                try Data(bytes).write(to: URL(fileURLWithPath: path))
                let before = Self.threadCPUSeconds()
                do {
                    let capture = try Capture.load(path: path)
                    loaded += 1
                    for flow in capture.flows { _ = FlowProfile(flow) }
                    _ = try? ReplayPlan(capture: capture)
                    _ = capture.notes
                } catch is PcapError {
                    refused += 1
                }
                return Self.threadCPUSeconds() - before
            }
            for name in allFixtures {
                let original = try [UInt8](Data(contentsOf: URL(fileURLWithPath: fixture(name))))
                let big = original.count > 100_000
                var variants: [[UInt8]] = []
                // Truncations: every offset inside the file header, then evenly spread cuts.
                for cut in 0..<min(40, original.count) { variants.append(Array(original.prefix(cut))) }
                let spread = big ? 8 : 40
                for i in 1...spread { variants.append(Array(original.prefix(original.count * i / (spread + 1)))) }
                // Byte flips: 1 to 8 random bytes set to random values.
                for _ in 0..<(big ? 8 : 60) {
                    var mutant = original
                    for _ in 0..<(1 + Int(random.next() % 8)) {
                        let at = Int(random.next() % UInt64(mutant.count))
                        mutant[at] = UInt8(truncatingIfNeeded: random.next())
                    }
                    variants.append(mutant)
                }
                // A parse that blows up on some input shows as a mutant costing seconds of CPU.
                // A flipped sequence number legitimately costs up to ~1.3 s in a debug build: the
                // gap it opens is zero-filled up to StreamReassembler.largestFilledGap (16 MiB)
                // and then profiled. This thread's CPU time, not wall time: a loaded CI took 30 s
                // of wall time for the whole test, which takes 3.5 s alone.
                for (index, variant) in variants.enumerated() {
                    mutants += 1
                    let spent = try examine(variant)
                    #expect(spent < 5, "\(name) variant \(index) took \(spent) s of CPU")
                }
            }
            #expect(loaded + refused == mutants)
            #expect(loaded > 0 && refused > 0)
            #expect(mutants > 900)
        }
    }
    /// CPU time this thread has used: unlike wall time, not stretched by other processes.
    private static func threadCPUSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
    @Test func theCommandsExitNonZeroWithTheReason() async throws {
        let empty = try Self.write([], "empty.pcap")
        let text = try Self.write(Array("hello\n".utf8), "text.pcap")
        defer {
            try? FileManager.default.removeItem(atPath: empty)
            try? FileManager.default.removeItem(atPath: text)
        }
        for arguments in [["profile", empty], ["profile", text, "--scn"], ["replay", empty, "--list"], ["replay", text], ["profile", "/nonexistent.pcap"]] {
            let (status, _, stderr) = try await runNetsim(arguments)
            #expect(status != 0, "\(arguments)")
            #expect(stderr.contains(arguments[1]), "\(arguments): \(stderr)")
            #expect(!stderr.contains("Fatal error"), "\(arguments): \(stderr)")
        }
        // A selector that is no selector is a usage error, as any bad flag is (QA 52: exit 1).
        for (command, flows, said) in [("profile", "nonsense", "not a flow selector"), ("replay", "0", "flows are numbered from 1"), ("replay", "", "empty flow selector")] {
            let (status, _, stderr) = try await runNetsim([command, fixture("zeek-http-get.pcap"), "--flow", flows, "--list"].filter { command == "replay" || $0 != "--list" })
            #expect(status == 64 && stderr.contains(said) && stderr.contains("--flow"), "\(command) --flow '\(flows)': \(status) \(stderr)")
        }
        // A flow the capture lacks is refused beside one it has (`1,99` used flow 1 alone), and
        // an empty item between commas as an empty selector is.
        for (flows, said) in [("1,99", "there is no flow 99 ('1,99'); its flows are numbered 1 to 2"), ("1,,2", "'1,,2' has an empty item between its commas")] {
            let (status, _, stderr) = try await runNetsim(["profile", fixture("zeek-http-206_example_c.pcap"), "--flow", flows])
            #expect(status != 0 && stderr.contains(said), "\(flows): \(stderr)")
        }
        // A speed so small that a captured pause divided by it overflowed Int64: the replay
        // trapped on its first request. Now refused before anything runs. A negative one was
        // taken for an option and said "Missing value for --speed".
        for speed in ["1e-300", "0.0009", "1001", "-1"] {
            let (status, _, stderr) = try await runNetsim(["replay", fixture("zeek-http-get.pcap"), "--speed", speed])
            #expect(status == 64 && stderr.contains("--speed must be a factor from 0.001 to 1000"), "\(speed): \(stderr)")
        }
    }
}
