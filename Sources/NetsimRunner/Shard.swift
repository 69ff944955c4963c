/// `netsim test --shard I/N`: the I-th of N disjoint parts of a suite, for CI runners that split
/// one suite between them. Every runner must be given the same scenarios: each shard is then
/// decided by the scenarios' names alone — the same on every machine and every run (a stable
/// hash, FNV-1a, never Swift's per-process randomized `hashValue`) — the shards are disjoint,
/// together they are the whole suite, and their sizes differ by at most one.
public struct Shard: Sendable, Equatable, CustomStringConvertible {
    /// 1-based, as people count runners (GitLab's `CI_NODE_INDEX` is 1-based too).
    public let index: Int
    public let count: Int

    public init(index: Int, count: Int) throws {
        let value = "\(index)/\(count)"
        guard count >= 1 else { throw ShardError(value, "the number of shards N must be at least 1") }
        guard (1...count).contains(index) else {
            throw ShardError(value, "the shard I must be from 1 to N = \(count)", shards: count)
        }
        self.index = index
        self.count = count
    }

    /// Parses `I/N`, e.g. `2/4`.
    public init(parsing text: String) throws {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let index = Int(parts[0].trimmingCharacters(in: .whitespaces)),
              let count = Int(parts[1].trimmingCharacters(in: .whitespaces)) else {
            throw ShardError("'\(text)'", "not I/N")
        }
        try self.init(index: index, count: count)
    }

    public var description: String { "\(index)/\(count)" }

    /// The items of this shard, in their original order. `name` is what decides (a scenario's
    /// name); `tieBreak` orders items with the same name (its file), so duplicates still split
    /// the same way everywhere.
    public func select<Item>(_ items: [Item], name: (Item) -> String, tieBreak: (Item) -> String) -> [Item] {
        // Rank by the hash (a pseudo-random order, so neighbours in the alphabet, often alike
        // in duration, spread over the shards), then deal the ranks round-robin.
        let ranked = items.indices.sorted { a, b in
            let (ka, kb) = ((Self.fnv1a(name(items[a])), name(items[a]), tieBreak(items[a])),
                            (Self.fnv1a(name(items[b])), name(items[b]), tieBreak(items[b])))
            return ka < kb
        }
        var mine = Set<Int>()
        for (rank, item) in ranked.enumerated() where rank % count == index - 1 { mine.insert(item) }
        return items.indices.filter(mine.contains).map { items[$0] }
    }

    /// 64-bit FNV-1a of the UTF-8 bytes: tiny, stable across machines and Swift versions.
    public static func fnv1a(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
    }
}

/// A `--shard` value that is not `I/N` with 1 ≤ I ≤ N.
public struct ShardError: Error, Sendable, CustomStringConvertible {
    /// The value as given.
    public let value: String
    public let reason: String
    /// N for the example, when the value's N was valid.
    let shards: Int

    init(_ value: String, _ reason: String, shards: Int = 4) {
        self.value = value
        self.reason = reason
        self.shards = shards
    }

    public var description: String {
        "--shard \(value): \(reason); write I/N, the I-th of N shards, with N ≥ 1 and 1 ≤ I ≤ N, e.g. --shard 1/\(shards) … --shard \(shards)/\(shards)"
    }
}
