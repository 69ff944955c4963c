import Foundation
import NetsimRunner
import NetsimScenario
import Testing

/// `--shard I/N`: disjoint shards that together are the suite, decided the same on every machine.
@Suite("sharding a suite")
struct ShardTests {
    /// Every shard of `names` for `count` shards.
    static func shards(_ names: [String], count: Int) throws -> [[String]] {
        try (1...count).map { try Shard(index: $0, count: count).select(names, name: { $0 }, tieBreak: { _ in "" }) }
    }

    /// The checks every split must pass: disjoint, complete, balanced, order kept.
    static func checkPartition(_ names: [String], count: Int) throws {
        let shards = try Self.shards(names, count: count)
        let all = shards.flatMap { $0 }
        #expect(all.count == names.count, "no name in two shards (\(count) shards)")
        #expect(Set(all) == Set(names), "together, the shards are everything (\(count) shards)")
        let sizes = shards.map(\.count)
        #expect(sizes.max()! - sizes.min()! <= 1, "sizes \(sizes)")
        for shard in shards { #expect(shard == names.filter(shard.contains), "each shard keeps the suite's order") }
    }

    @Test("synthetic names: 1 to 9 shards partition 500 names; the same call gives the same split")
    func synthetic() throws {
        let names = (0..<500).map { "scenario-\($0)" }
        for count in 1...9 { try Self.checkPartition(names, count: count) }
        #expect(try Self.shards(names, count: 4) == Self.shards(names, count: 4))
        #expect(try Self.shards(names.reversed(), count: 4).map { Set($0) } == Self.shards(names, count: 4).map { Set($0) },
                "the order the files were found in does not matter")
        #expect(try Self.shards(["only"], count: 3).map(\.count) == [1, 0, 0], "fewer scenarios than shards: the first shards get them")
    }

    @Test("the bundled Scenarios/ split into 1 to 5 shards, by name, file on a tie")
    func bundled() throws {
        let folder = URL(fileURLWithPath: repositoryRoot).appendingPathComponent("Scenarios")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".scn") }.sorted()
        let scenarios = try files.map { try ScenarioParser.parse(file: folder.appendingPathComponent($0).path) }
        #expect(scenarios.count >= 10)
        for count in 1...5 {
            let shards = try (1...count).map { try Shard(index: $0, count: count).select(scenarios, name: \.name, tieBreak: \.file) }
            let files = shards.flatMap { $0.map(\.file) }
            #expect(files.count == scenarios.count && Set(files) == Set(scenarios.map(\.file)), "\(count) shards")
        }
        // Two files with one name still go to one shard each, and never both nowhere.
        let twins = scenarios + [scenarios[0]].map { var copy = $0; copy.file += ".copy"; return copy }
        let split = try (1...2).map { try Shard(index: $0, count: 2).select(twins, name: \.name, tieBreak: \.file) }
        #expect(split.flatMap { $0 }.count == twins.count)
    }

    @Test("FNV-1a: the published test vectors, so every machine computes the same split")
    func stableHash() {
        #expect(Shard.fnv1a("") == 0xcbf2_9ce4_8422_2325)
        #expect(Shard.fnv1a("a") == 0xaf63_dc4c_8601_ec8c)
        #expect(Shard.fnv1a("foobar") == 0x8594_4171_f739_67e8)
    }

    @Test("I/N parses; anything else says what is allowed", arguments: ["0/4", "5/4", "1/0", "-1/2", "a/b", "3", "1/2/3", "", "/4"])
    func badValues(_ text: String) {
        do {
            _ = try Shard(parsing: text)
            Issue.record("\(text) was accepted")
        } catch {
            #expect("\(error)".contains("1 ≤ I ≤ N"), "\(error)")
            #expect("\(error)".contains("--shard"), "\(error)")
        }
    }

    /// The message names the value as given and its example fits its N (it said
    /// "--shard the shard I must be … (4/3)", and always "e.g. --shard 1/4").
    @Test func theMessageNamesTheValueAndFitsItsN() {
        #expect(throws: (any Error).self) { try Shard(parsing: "4/3") }
        do {
            _ = try Shard(parsing: "4/3")
        } catch {
            #expect("\(error)" == "--shard 4/3: the shard I must be from 1 to N = 3; write I/N, the I-th of N shards, with N ≥ 1 and 1 ≤ I ≤ N, e.g. --shard 1/3 … --shard 3/3")
        }
    }

    @Test func goodValues() throws {
        #expect(try Shard(parsing: "2/4") == Shard(index: 2, count: 4))
        #expect(try Shard(parsing: "1/1").description == "1/1")
        #expect(try Shard(parsing: " 3 / 3 ") == Shard(index: 3, count: 3))
    }
}
