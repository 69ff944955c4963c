import Foundation
import NetsimCore
import NetsimFaults
import NetsimRoutes
import NetsimLink
import Testing
@testable import NetsimScenario

/// Swift Testing has a `SourceLocation` too.
typealias Location = NetsimScenario.SourceLocation

/// A scenario that uses every field of the format, and the model it must give.
@Suite("Scenario files: the complete format")
struct ScenarioParserTests {
    static let file = "Scenarios/complete.scn"

    static let complete = """
        name: lockscreen
        description: |
          iOS closes an app's sockets while the phone is locked; the first request
          after unlocking must still succeed.
        seed: 7
        upstream:
          routes:
            - path: /feed
              method: GET
              status: 203
              headers: { Content-Type: application/json, X-Trace: abc }
              body: '{"items":[]}'
              delay: 10ms
              chunked: true
            - path: /big
              body_bytes: 64KB
          idle_timeout: 5s
        link:
          profile: 3g
          latency: 100ms
          jitter: 10ms
          distribution: normal
          bandwidth: 1mbit
          loss: 1%
          loss_model: gilbert-elliott
          loss_burst: 3
          slice: 100
          slice_delay: 1ms
          up: { latency: 50ms, jitter: 5ms, bandwidth: 256kbit, loss: 2% }
          down: { latency: 65ms, bandwidth: 2mbit }
        client:
          driver: exec
          command: [python3, Fixtures/clients/urllib3_client.py]
          timeout: 5s
          connect_timeout: 2s
          pool: 4
          retries: 1
          settings: { cache: "off", mode: fast }
        timeline:
          - at: 0s
            request: warm
            method: POST
            path: /feed
            headers: { Accept: "*/*" }
            body: "hello"
            count: 4
            parallel: 2
          - at: 2s
            fault: stale=rst
            name: lock
            target: existing
            probability: 50%
            after_open: 1s
            for: 10s
          - fault: refuse
            name: down
          - at: 5s
            clear: lock
          - clear: [down]
          - clear: all
          - link: { profile: edge, up: { loss: 1% } }
          - wait: 2s
          - request: after-unlock
            path: /feed
        expect:
          - request: after-unlock
            status: 200
            error: none
            within: 2s
            body: "exact text"
            connection: new
            requests: 1
          - request: warm
            body: { contains: items }
            error: closed-before-response
            requests: { min: 1, max: 4 }
            connection: reused
          - request: warm
            body: { sha256: E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855 }
            error: any
          - after: 5s
            error: none
          - server: { method: POST, path: /order }
            count: 1
          - server: {}
            count: { min: 2 }
          - relay:
              new_connections: { from: 5s, to: 10s, min: 1, max: 3 }
              attempts: { from: 0s, min_growth: 1.5, max_per_second: 2 }
              bytes: { dir: down, min: 1KB, max: 10MB, from: 1s, to: 2s }
          - relay:
              new_connections: { count: 2 }
              bytes: { max: 1MiB }

        """

    func at(_ line: Int, _ column: Int) -> Location {
        Location(file: Self.file, line: line, column: column)
    }

    func parse(_ text: String = complete) throws -> Scenario {
        try ScenarioParser.parse(source: text, file: Self.file)
    }

    @Test func topLevelFields() throws {
        let scenario = try parse()
        #expect(scenario.file == Self.file)
        #expect(scenario.name == "lockscreen")
        #expect(scenario.description == "iOS closes an app's sockets while the phone is locked; the first request\nafter unlocking must still succeed.")
        #expect(scenario.seed == 7)
        #expect(scenario.sourceLines[0] == "name: lockscreen")
        #expect(scenario.sourceLines.count == Self.complete.split(separator: "\n", omittingEmptySubsequences: false).count)
    }

    @Test func upstreamRoutes() throws {
        let scenario = try parse()
        let feed = HTTPRoute(
            method: "GET", path: "/feed", status: 203,
            headers: [HTTPHeader("Content-Type", "application/json"), HTTPHeader("X-Trace", "abc")],
            body: .text(#"{"items":[]}"#), delay: .milliseconds(10), chunked: true)
        let big = HTTPRoute(path: "/big", body: .generated(bytes: 64_000))
        #expect(scenario.upstream == .builtin(routes: [feed, big], idleTimeout: .seconds(5)))
    }

    @Test func linkIsTheProfileWithOverrides() throws {
        let link = try parse().link
        #expect(link.up.latency == .milliseconds(50))
        #expect(link.down.latency == .milliseconds(65))
        #expect(link.up.jitter == .milliseconds(5))
        #expect(link.down.jitter == .milliseconds(10))
        #expect(link.up.distribution == .normal && link.down.distribution == .normal)
        #expect(link.up.bandwidth == .kbit(256))
        #expect(link.down.bandwidth == .mbit(2))
        #expect(link.up.loss == LossModel.gilbertElliott(averageLoss: .percent(2), meanBurst: 3))
        #expect(link.down.loss == LossModel.gilbertElliott(averageLoss: .percent(1), meanBurst: 3))
        #expect(link.up.sliceSize == 100 && link.down.sliceDelay == .milliseconds(1))
    }

    @Test func client() throws {
        let client = try parse().client
        #expect(client == ClientSpec(
            driver: "exec", command: ["python3", "Fixtures/clients/urllib3_client.py"],
            timeout: .seconds(5), connectTimeout: .seconds(2), pool: 4, retries: 1,
            settings: ["cache": "off", "mode": "fast"], location: at(31, 1)))
    }

    @Test func timeline() throws {
        let steps = try parse().timeline
        #expect(steps.count == 9)
        #expect(steps[0] == TimelineStep(
            at: .zero,
            action: .request(RequestStep(
                name: "warm", method: "POST", path: "/feed", headers: [HTTPHeader("Accept", "*/*")],
                body: "hello", count: 4, parallel: 2)),
            location: at(40, 5)))
        let lock = FaultRule(.stale(.rst), trigger: .after(.seconds(1)), target: .existing, probability: .percent(50), lasts: .seconds(10))
        #expect(steps[1] == TimelineStep(at: .seconds(2), action: .fault(name: "lock", rule: lock), location: at(48, 5)))
        #expect(steps[2] == TimelineStep(at: nil, action: .fault(name: "down", rule: FaultRule(.refuse)), location: at(55, 5)))
        #expect(steps[3].action == .clear(names: ["lock"]) && steps[3].at == .seconds(5))
        #expect(steps[4].action == .clear(names: ["down"]))
        #expect(steps[5].action == .clear(names: []))
        var edge = LinkProfile.named("edge")!.link
        edge.up.loss = .bernoulli(.percent(1))
        #expect(steps[6].action == .link(edge))
        #expect(steps[7].action == .wait(.seconds(2)))
        #expect(steps[8] == TimelineStep(at: nil, action: .request(RequestStep(name: "after-unlock", path: "/feed")), location: at(63, 5)))
    }

    @Test func requestExpectations() throws {
        let expectations = try parse().expectations
        #expect(expectations.count == 8)
        #expect(expectations[0] == Expectation(
            subject: .request("after-unlock"),
            checks: [
                LocatedCheck(.status(200), location: at(67, 5)),
                LocatedCheck(.error(.none), location: at(68, 5)),
                LocatedCheck(.within(.seconds(2)), location: at(69, 5)),
                LocatedCheck(.body(.equals("exact text")), location: at(70, 5)),
                LocatedCheck(.connection(.new), location: at(71, 5)),
                LocatedCheck(.requestCount(.exactly(1)), location: at(72, 5)),
            ],
            location: at(66, 5)))
        #expect(expectations[1].checks.map(\.check) == [
            .body(.contains("items")), .error(.kind(.closedBeforeResponse)),
            .requestCount(CountRange(minimum: 1, maximum: 4)), .connection(.reused),
        ])
        #expect(expectations[2].checks.map(\.check) == [
            .body(.sha256("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")), .error(.any),
        ])
        #expect(expectations[3].subject == .requestsAfter(.seconds(5)))
        #expect(expectations[3].checks.map(\.check) == [.error(.none)])
    }

    @Test func serverAndRelayExpectations() throws {
        let expectations = try parse().expectations
        #expect(expectations[4].subject == .server(method: "POST", path: "/order"))
        #expect(expectations[4].checks == [LocatedCheck(.serverCount(.exactly(1)), location: at(84, 5))])
        #expect(expectations[5].subject == .server(method: nil, path: nil))
        #expect(expectations[5].checks.map(\.check) == [.serverCount(CountRange(minimum: 2))])
        #expect(expectations[6].subject == .relay)
        #expect(expectations[6].location == at(87, 5))
        #expect(expectations[6].checks == [
            LocatedCheck(.newConnections(TimeWindow(from: .seconds(5), to: .seconds(10)), CountRange(minimum: 1, maximum: 3)), location: at(88, 7)),
            LocatedCheck(.attempts(TimeWindow(from: .zero), minimumGrowth: 1.5, maximumPerSecond: 2), location: at(89, 7)),
            LocatedCheck(.bytes(.down, TimeWindow(from: .seconds(1), to: .seconds(2)), CountRange(minimum: 1000, maximum: 10_000_000)), location: at(90, 7)),
        ])
        #expect(expectations[7].checks.map(\.check) == [
            .newConnections(TimeWindow(), .exactly(2)), .bytes(nil, TimeWindow(), CountRange(maximum: 1_048_576)),
        ])
    }

    static let minimal = """
        name: minimal
        description: The smallest valid scenario.
        upstream:
          address: 127.0.0.1:8080
        client:
          driver: naive
        timeline:
          - request: only
            path: /
        expect:
          - request: only
            status: 200

        """

    @Test func defaults() throws {
        let scenario = try parse(Self.minimal)
        #expect(scenario.seed == 1)
        #expect(scenario.upstream == .address(Endpoint(host: "127.0.0.1", port: 8080)))
        #expect(scenario.link == .unimpaired)
        #expect(scenario.client == ClientSpec(driver: "naive", location: at(5, 1)))
        #expect(scenario.timeline == [TimelineStep(at: nil, action: .request(RequestStep(name: "only", path: "/")), location: at(8, 5))])
    }

    @Test func replayAndCommandAsAString() throws {
        let text = Self.minimal
            .replacingOccurrences(of: "  address: 127.0.0.1:8080", with: "  replay: Fixtures/pcap/zeek-http-get.pcap")
            .replacingOccurrences(of: "  driver: naive", with: "  driver: exec\n  command: python3 'my client.py' --fast")
        let scenario = try parse(text)
        #expect(scenario.upstream == .replay(path: "Fixtures/pcap/zeek-http-get.pcap"))
        #expect(scenario.client.command == ["python3", "my client.py", "--fast"])
    }

    /// Old-Mac files (a lone CR per line): YAML counts their lines, and so do the diagnostics,
    /// which quote the line and put the caret under the column.
    @Test func classicMacLineEndingsAreLinesToo() {
        #expect(ScenarioErrors.lines(of: "a\rb\r\nc\nd") == ["a", "b", "c", "d"])
        let text = Self.minimal.replacingOccurrences(of: "  driver: naive", with: "  driver: naive\n  timeout: 2x").replacingOccurrences(of: "\n", with: "\r")
        let rendered = parseDiagnostics(text, file: Self.file).first.map { ScenarioErrors(diagnostics: [$0], sourceLines: ScenarioErrors.lines(of: text)).rendered() } ?? ""
        #expect(rendered.contains("  timeout: 2x\n"), "\(rendered)")
    }

    @Test func windowsCRLineEndingsAndAFinalLineWithoutNewline() throws {
        let text = Self.minimal.replacingOccurrences(of: "\n", with: "\r\n").trimmingCharacters(in: .newlines)
        let scenario = try parse(text)
        #expect(scenario.sourceLines[0] == "name: minimal")
        #expect(scenario.timeline[0].location == at(8, 5))
    }

    /// The scenario `link:` block and `netsim relay`'s flags share one implementation.
    @Test func linkBlockMatchesLinkSettings() throws {
        let text = Self.minimal.replacingOccurrences(
            of: "client:", with: "link:\n  profile: dsl\n  loss: 3%\n  down: { latency: 20ms }\n  slice: 1KB\nclient:")
        let settings = LinkSettings(profile: LinkProfile.named("dsl"), loss: .percent(3), down: .init(latency: .milliseconds(20)), slice: ByteCount(1000))
        #expect(try parse(text).link == settings.configuration())
    }
}

/// The documentation's own examples must stay valid.
@Suite("Scenario files: docs/scenario-format.md")
struct FormatDocumentationTests {
    @Test func theOpeningExampleIsAValidScenario() throws {
        let url = InvalidFixtureTests.root.appendingPathComponent("docs/scenario-format.md")
        let text = try String(contentsOf: url, encoding: .utf8)
        let start = try #require(text.range(of: "```yaml\n"))
        let end = try #require(text.range(of: "```", range: start.upperBound..<text.endIndex))
        let scenario = try ScenarioParser.parse(source: String(text[start.upperBound..<end.lowerBound]), file: "docs/scenario-format.md")
        #expect(scenario.name == "lockscreen")
        #expect(scenario.expectations.count == 1)
    }
}

/// The rules shared by `netsim relay`'s flags and a scenario's `link:` block.
@Suite("Link settings")
struct LinkSettingsTests {
    @Test func problemsInAFixedOrder() {
        #expect(LinkSettings().problems.isEmpty)
        #expect(LinkSettings(geP: .percent(1), sliceDelay: .milliseconds(1)).problems == [
            .gilbertElliottParametersWithoutModel, .gilbertElliottPWithoutR, .sliceDelayWithoutSlice,
        ])
        #expect(LinkSettings(lossModel: .gilbertElliott).problems == [.gilbertElliottWithoutLoss])
        #expect(LinkSettings(lossModel: .gilbertElliott, lossBurst: 0.5, slice: ByteCount(0)).problems.contains(.lossBurstOutOfRange))
        #expect(LinkSettings(down: .init(loss: .percent(1)), lossModel: .gilbertElliott).problems.isEmpty)
        // Above burst/(burst+1) and short of 100%, an average loss cannot be had; 100% can.
        #expect(LinkSettings(loss: .percent(81), up: .init(loss: .percent(95)), lossModel: .gilbertElliott, lossBurst: 9).problems == [
            .gilbertElliottLossOutOfReach(.up, loss: .percent(95), meanBurst: 9),
        ])
        #expect(LinkSettings(loss: .certain, lossModel: .gilbertElliott).problems.isEmpty)
        #expect(LinkSettings(loss: .percent(90), lossModel: .gilbertElliott, geP: .percent(1), geR: .percent(1)).problems.isEmpty)
    }

    @Test func directionSettingsWinOverBothWaysWhichWinOverTheProfile() {
        let settings = LinkSettings(profile: LinkProfile.named("3g"), latency: .milliseconds(10), up: .init(latency: .milliseconds(30)))
        let link = settings.configuration()
        #expect(link.up.latency == .milliseconds(30) && link.down.latency == .milliseconds(10))
        #expect(link.down.bandwidth == .kbit(780))
    }

    @Test func zeroLossRemovesTheProfilesLoss() {
        let link = LinkSettings(profile: LinkProfile.named("very-bad-network"), loss: .zero).configuration()
        #expect(link.up.loss == nil && link.down.loss == nil)
    }
}
