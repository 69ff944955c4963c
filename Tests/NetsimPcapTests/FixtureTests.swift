import Foundation
import NetsimCore
import Testing
@testable import NetsimPcap

/// The real third-party captures in Fixtures/pcap, held against what tshark reports for them.
@Suite("real captures, against tshark")
struct FixtureTests {
    @Test(arguments: allFixtures)
    func flowsAndReassembledBytesMatchTshark(_ name: String) async throws {
        let path = fixture(name)
        let capture = try Capture.load(path: path)
        #expect(capture.flows.count == (try await Tshark.conversations(path)).count, "\(name): one flow per tshark conversation")
        for (stream, flow) in capture.flows.enumerated() {
            let (first, second) = try await Tshark.follow(path, stream: stream)
            // tshark's node 0 is the side that sent the stream's first packet: the client here.
            #expect(flow.request.bytes == first, "\(name) stream \(stream): client bytes")
            #expect(flow.response.bytes == second, "\(name) stream \(stream): server bytes")
            let irtt = try await Tshark.fields(path, filter: "tcp.stream == \(stream) and tcp.analysis.initial_rtt", ["tcp.analysis.initial_rtt"]).first?.first
            if let irtt, let seconds = Double(irtt), let ours = FlowProfile(flow).handshakeRTT {
                #expect(abs(Double(ours) / 1e9 - seconds) < 2e-6, "\(name): handshake RTT \(ours) ns vs tshark \(seconds) s")
            }
        }
    }

    @Test(arguments: allFixtures)
    func httpExchangesMatchTsharksRequestsAndResponses(_ name: String) async throws {
        let path = fixture(name)
        let plan = try ReplayPlan(capture: Capture.load(path: path))
        let requests = try await Tshark.fields(path, filter: "http.request", ["tcp.stream", "http.request.method", "http.request.uri"])
        let responses = try await Tshark.fields(path, filter: "http.response", ["tcp.stream", "http.response.code"])
        #expect(plan.exchanges.count == requests.count, "\(name)")
        for stream in Set(requests.map { $0[0] }) {
            let ours = plan.exchanges.filter { "\($0.flow - 1)" == stream }
            let theirs = requests.filter { $0[0] == stream }
            #expect(ours.map { "\($0.method) \($0.target)" } == theirs.map { "\($0[1]) \($0[2])" }, "\(name) stream \(stream)")
            #expect(ours.compactMap(\.status).map(String.init) == responses.filter { $0[0] == stream }.map { $0[1] }, "\(name) stream \(stream)")
        }
    }

    @Test func pipelinedHasFiveExchangesOnOneKeepAliveConnectionThenTheClientCloses() throws {
        let capture = try Capture.load(path: fixture("zeek-http-pipelined-requests.pcap"))
        let plan = try ReplayPlan(capture: capture)
        #expect(plan.exchanges.count == 5)
        #expect(Set(plan.exchanges.map(\.flow)) == [1])
        #expect(plan.exchanges.allSatisfy { $0.status == 200 && $0.serverClose == nil })
        #expect(plan.exchanges.map(\.response.count).reduce(0, +) == capture.flows[0].response.bytes.count)
        let profile = FlowProfile(capture.flows[0])
        #expect(profile.idleGaps.contains { $0.length > 26_000_000_000 }, "about 27 s idle")
        #expect(profile.close.first?.fromClient == true && profile.close.first?.kind == .fin)
    }

    @Test func retransmissionsIn206MatchTsharkAndShowAsLoss() async throws {
        let path = fixture("zeek-http-206_example_c.pcap")
        let profiles = try Capture.load(path: path).flows.map(FlowProfile.init)
        let theirs = try await Tshark.fields(path, filter: "tcp.analysis.retransmission", ["tcp.stream", "tcp.srcport"])
        #expect(theirs.count == 10)
        for (stream, profile) in profiles.enumerated() {
            let fromServer = theirs.filter { $0[0] == "\(stream)" && $0[1] == "80" }.count
            #expect(profile.toClient.retransmissions == fromServer)
            #expect(profile.toServer.retransmissions == theirs.filter { $0[0] == "\(stream)" && $0[1] != "80" }.count)
            #expect(profile.toClient.lossRate > 0.01)
        }
        let duplicates = try await Tshark.fields(path, filter: "tcp.analysis.duplicate_ack", ["tcp.stream"]).count
        #expect(profiles.map { $0.toServer.duplicateAcks + $0.toClient.duplicateAcks }.reduce(0, +) == duplicates)
        let suggestion = LinkSuggestion(profiles)
        #expect(suggestion.downLoss > 0.01 && suggestion.upLoss == 0)
        #expect(suggestion.roundTrip.map { (40_000_000...50_000_000).contains($0) } == true)
    }

    /// The first FIN or RST in each capture, who sent it, and what tshark says.
    @Test(arguments: [
        ("pcpp-one_http_stream_fin.pcap", "server FIN first, then client FIN"),
        ("pcpp-one_http_stream_rst.pcap", "server FIN first, then client RST"),
        ("zeek-http-get.pcap", "client FIN first, then server FIN"),
    ])
    func closesMatchTshark(_ name: String, _ expected: String) async throws {
        let path = fixture(name)
        let profile = try FlowProfile(#require(Capture.load(path: path).flows.first))
        #expect(profile.close.description == expected)
        let closes = try await Tshark.fields(path, filter: "tcp.flags.fin == 1 or tcp.flags.reset == 1", ["tcp.srcport", "tcp.flags.reset"])
        let first = try #require(closes.first)
        #expect((first[0] == "80") == !(profile.close.first?.fromClient ?? true))
        let reset = closes.first { $0[0] != first[0] }.map { $0[1] == "1" || $0[1] == "True" }
        #expect(reset == (profile.close.second?.kind == .rst))
    }

    @Test func arkimeServerResetsTheIdleKeepAliveConnection() async throws {
        let path = fixture("arkime-http-wrapped-header.pcap")
        let flow = try #require(try Capture.load(path: path).flows.first)
        let profile = FlowProfile(flow)
        #expect(profile.close.first?.kind == .rst && profile.close.first?.fromClient == false)
        #expect(profile.close.idleBefore > 8_000_000_000)
        let rst = try await Tshark.fields(path, filter: "tcp.flags.reset == 1", ["tcp.srcport", "frame.time_delta"])
        #expect(rst.count == 1 && rst[0][0] == "80")
        #expect(abs(Double(profile.close.idleBefore) / 1e9 - Double(rst[0][1])!) < 1e-5)
        let exchange = try #require(try ReplayPlan(capture: Capture.load(path: path)).exchanges.first)
        #expect(exchange.serverClose?.kind == .rst)
        #expect((9_000_000_000...9_300_000_000).contains(exchange.serverClose?.after ?? 0), "RST about 9.1 s after the answer")
    }

    /// Idle gaps start where Wireshark shows them: seconds since the capture's first packet
    /// (QA 65: 389.5 ms from the flow's start, where tshark says 1.571 s).
    @Test func idleGapsStartAtTheCapturesTimesAsTsharkShowsThem() async throws {
        let path = fixture("zeek-http-206_example_c.pcap")
        let capture = try Capture.load(path: path)
        let profile = FlowProfile(capture.flows[1])
        let times = try await Tshark.fields(path, filter: "tcp.stream == 1", ["frame.time_relative"]).compactMap { Double($0[0]) }
        let theirs = zip(times, times.dropFirst()).filter { $1 - $0 >= 1 }.map { String(format: "from %.3f s", $0.0) }
        let text = ProfileReport.text([profile], capture: capture)
        #expect(theirs.count == profile.idleGaps.count && theirs.count > 1, "\(theirs)")
        for start in theirs { #expect(text.contains(start), "\(start) in \(text)") }
        #expect(text.contains("(times since the capture's first packet)"))
    }
}
