import NetsimCore
import ArgumentParser
import Foundation
import NetsimRunner
import NetsimScenario

/// `netsim test --shard I/N` (docs/running.md): parsing with the exit status of an invalid
/// command line (2), and picking the shard's scenarios.
enum ShardOption {
    /// nil without `--shard`; a bad value is printed with what is allowed, and exits with status 2.
    static func parse(_ text: String?) throws -> Shard? {
        guard let text else { return nil }
        do {
            return try Shard(parsing: text)
        } catch {
            StandardStream.error.write("netsim test: \(error)\n")
            throw ExitCode(2)
        }
    }

    /// The shard's scenarios (all of them without `--shard`), decided by name (file on a tie).
    static func select(_ scenarios: [Scenario], shard: Shard?) -> [Scenario] {
        guard let shard else { return scenarios }
        return shard.select(scenarios, name: \.name, tieBreak: \.file)
    }

    /// The JUnit suite name: each shard's differs, so reports merged by a CI system stay apart.
    static func suiteName(_ shard: Shard?) -> String {
        shard.map { "netsim shard \($0.index) of \($0.count)" } ?? "netsim"
    }
}
