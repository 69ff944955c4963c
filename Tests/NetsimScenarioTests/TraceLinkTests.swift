import Foundation
import NetsimCore
import NetsimLink
import Testing
@testable import NetsimScenario

/// `link: { trace: { down: …, up: … } }`: recorded links, found beside the scenario (or above it).
@Suite("Scenario files: traced links")
struct TraceLinkTests {
    /// A scenario in the repository's Scenarios/ folder (the file itself need not exist).
    static let file = InvalidFixtureTests.root.appendingPathComponent("Scenarios/traced.scn").path

    static func parse(link: String) throws -> Scenario {
        let text = ScenarioParserTests.minimal.replacingOccurrences(of: "client:", with: "link:\n\(link)\nclient:")
        return try ScenarioParser.parse(source: text, file: file)
    }

    static func errors(link: String) -> [String] {
        do {
            _ = try parse(link: link)
            return []
        } catch let error as ScenarioErrors {
            return error.diagnostics.map { "\($0.location.line):\($0.location.column): \($0.message)" }
        } catch {
            return ["\(error)"]
        }
    }

    @Test func theBundledLTETraceIsFoundFromTheScenariosFolder() throws {
        let scenario = try Self.parse(link: "  profile: lte\n  trace: { down: Fixtures/traces/mahimahi/Verizon-LTE-short.down }")
        let down = try #require(scenario.link.down.trace)
        #expect(down.milliseconds.count == 58_655 && down.periodNanoseconds == 140_000 * 1_000_000)
        // The trace replaces the profile's bandwidth that way; up keeps the profile's.
        #expect(scenario.link.down.bandwidth == nil)
        #expect(scenario.link.up.trace == nil && scenario.link.up.bandwidth == LinkProfile.named("lte")!.link.up.bandwidth)
        #expect(scenario.link.down.latency == LinkProfile.named("lte")!.link.down.latency)
    }

    @Test func aMissingTraceIsAnErrorAtItsValue() {
        let errors = Self.errors(link: "  trace: { up: traces/nowhere.up }")
        #expect(errors.count == 1)
        #expect(errors.first?.hasPrefix("6:16: cannot use the trace:") == true, "\(errors)")
        #expect(errors.first?.contains("nowhere.up") == true)
    }

    @Test func aTraceAndABandwidthTheSameWayAreRefused() {
        let errors = Self.errors(link: "  bandwidth: 1mbit\n  trace: { down: Fixtures/traces/mahimahi/Verizon-LTE-short.down }")
        #expect(errors == ["7:3: a trace is the link's capacity down; 'bandwidth' for that direction means nothing beside it"], "\(errors)")
    }

    @Test func aTraceNeedsADirectionAndKnowsItsKeys() {
        #expect(Self.errors(link: "  trace: {}") == ["6:3: 'trace' needs 'up', 'down' or both"])
        let unknown = Self.errors(link: "  trace: { dwn: x }")
        #expect(unknown == ["6:12: unknown key 'dwn' in 'link.trace'"], "\(unknown)")
    }
}
