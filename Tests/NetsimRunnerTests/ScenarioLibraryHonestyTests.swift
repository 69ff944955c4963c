import Foundation
import NetsimRunner
import NetsimScenario
import Testing

/// The honesty of the scenario library (issue 4): every bundled scenario must tell a bad client
/// from a good one. Each `Scenarios/*.scn` FAILS with `naive` — caught by the expectation named
/// in `caughtBy` — and PASSES with `resilient`. A scenario that no client can fail is a defect.
@Suite("Scenario library honesty", .serialized)
struct ScenarioLibraryHonestyTests {
    /// For each bundled scenario, the check that catches `naive` (a failing check title).
    static let caughtBy: [String: String] = [
        "airplane-mode": "request landed: error none",
        "captive-portal": "request joined: error other",
        "goaway-deploy": "request after-deploy: error none",
        "handover": "request after-handover: error none",
        "high-latency-dns": "request first: error none",
        "high-latency-parallel": "request second-screen: within 1.3s",
        "keepalive-race": "request boundary: error none",
        "lockscreen": "request after-unlock: error none",
        "lockscreen-h2": "request after-unlock: error none",
        "lockscreen-long": "request after-unlock: error none",
        "lockscreen-post": "server POST /order: count at most 1",
        "loss": "request second: error none",
        "network-flap": "relay: connection attempts",
        "outage-503": "relay: requests /feed: at most 4, each at least 1.5s after the one before",
        "outage-cache-poisoning": "request recovered: body contains \"headline\"",
        "portal-tls": "request joined: message starts with \"captive portal:\"",
        "profile-3g": "request refresh: error none",
        "profile-edge": "request refresh: error none",
        "real-loss": "request second: error none",
        "refused": "request open-app: error refused",
        "refused-stream": "server POST /order: count at most 1",
        "server-fin": "request next: error none",
        "slow-server": "server /report: count at most 2",
        "very-bad-network": "request user: error none",
    ]

    static let folder = repositoryRoot + "/Scenarios"

    /// The bundled scenarios' names (file names without `.scn`), sorted.
    static let bundled: [String] = {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return files.filter { $0.hasSuffix(".scn") }.map { String($0.dropLast(4)) }.sorted()
    }()

    /// The bundled scenarios on a packet link (`link: { mode: packet }`): they need Linux and
    /// root, and run in a test of their own, skipped where they cannot run.
    static let packetLinked: [String] = bundled.filter { name in
        (try? ScenarioParser.parse(file: "\(folder)/\(name).scn"))?.linkMode == .packet
    }

    /// Why the packet-linked scenarios cannot run here; nil when they can (CI runs as root).
    static let packetLinksMissing: String? = {
        guard let name = packetLinked.first, let scenario = try? ScenarioParser.parse(file: "\(folder)/\(name).scn") else { return nil }
        return ScenarioRunner.cannotRun(scenario)
    }()

    @Test func everyBundledScenarioIsInTheTable() {
        #expect(!Self.bundled.isEmpty)
        #expect(Self.bundled == Self.caughtBy.keys.sorted(), "a scenario without an entry in caughtBy, or an entry without a scenario")
    }

    static func run(_ name: String, driver: String) async throws -> RunResult {
        let parsed = try ScenarioParser.parse(file: "\(folder)/\(name).scn")
        return try await ScenarioRunner.run(parsed, options: RunOptions(driver: driver, workingDirectory: repositoryRoot))
    }

    /// `naive` and `resilient` run side by side (two runs at a time, each on its own ports).
    @Test(arguments: bundled.filter { !packetLinked.contains($0) })
    func naiveFailsAndResilientPasses(_ name: String) async throws {
        try await Self.naiveFailsAndResilientPasses(name)
    }

    /// The same on a packet link: each driver in a network namespace of its own (in-process
    /// drivers through `netsim exec-client`).
    @Test(.enabled(if: packetLinksMissing == nil, "link mode packet cannot run here"), arguments: packetLinked)
    func onAPacketLinkNaiveFailsAndResilientPasses(_ name: String) async throws {
        try await Self.naiveFailsAndResilientPasses(name)
    }

    @Test func thePacketLinkedScenariosAreTheIssuesFour() {
        #expect(Self.packetLinked == ["airplane-mode", "handover", "high-latency-dns", "real-loss"])
    }

    static func naiveFailsAndResilientPasses(_ name: String) async throws {
        let expected = try #require(Self.caughtBy[name], "no entry for \(name) in caughtBy")
        async let naiveRun = Self.run(name, driver: "naive")
        async let resilientRun = Self.run(name, driver: "resilient")
        let (naive, resilient) = try await (naiveRun, resilientRun)

        #expect(!naive.passed, "\(name): naive passed — the scenario cannot tell a bad client from a good one")
        let failed = naive.failures.map(\.title)
        #expect(failed.contains(expected), "\(name): naive was not caught by '\(expected)'; it failed \(failed)\n\(TextReport.render(naive))")

        #expect(resilient.passed, "\(name): resilient failed\n\(TextReport.render(resilient))")
    }
}
