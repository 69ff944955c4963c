import NetsimCore
import NetsimLink

let ms: Int64 = 1_000_000
let second: Int64 = 1_000_000_000

/// One `schedule` call and what came out of it.
struct Scheduled {
    var count: Int
    var arrival: Int64
    var releases: [Release]
}

/// Feeds chunks (count, arrival) through a fresh shaper and returns every call's output.
func feed(
    _ link: DirectionLink,
    roundTrip: Int64 = 100 * ms,
    seed: UInt64 = 1,
    chunks: [(count: Int, arrival: Int64)]
) -> [Scheduled] {
    var shaper = DirectionShaper(link: link, roundTripNanoseconds: roundTrip, random: SeededRandom(seed: seed))
    var out: [Release] = []
    var result: [Scheduled] = []
    result.reserveCapacity(chunks.count)
    for chunk in chunks {
        out.removeAll(keepingCapacity: true)
        shaper.schedule(bytes: chunk.count, arrivedAt: chunk.arrival, into: &out)
        result.append(Scheduled(count: chunk.count, arrival: chunk.arrival, releases: out))
    }
    return result
}

/// Checks the shaper's contract on a run: byte sums exact per call, release times never
/// decrease across calls, and nothing is released before it arrived.
func contractViolations(_ run: [Scheduled]) -> [String] {
    var problems: [String] = []
    var last = Int64.min
    for (index, call) in run.enumerated() {
        let sum = call.releases.reduce(0) { $0 + $1.bytes }
        if sum != call.count { problems.append("call \(index): \(sum) bytes released for \(call.count)") }
        for release in call.releases {
            if release.bytes <= 0 { problems.append("call \(index): empty piece") }
            if release.at < last { problems.append("call \(index): \(release.at) before \(last)") }
            if release.at < call.arrival { problems.append("call \(index): released \(release.at) before arrival \(call.arrival)") }
            last = release.at
        }
    }
    return problems
}

/// Every release of a run, flattened.
func allReleases(_ run: [Scheduled]) -> [Release] {
    run.flatMap(\.releases)
}
