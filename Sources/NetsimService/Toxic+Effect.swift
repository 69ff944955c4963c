import Foundation
import NetsimCore
import NetsimLink
import NetsimRelay

/// What each toxic type does to a relay: a change to the link model, or fault rules.
extension Toxic {
    /// A non-negative whole number attribute (Toxiproxy's attributes are integers).
    private func count(_ key: String, unit: String) throws -> Int64 {
        guard case .number(let n)? = attributes[key] else { throw APIError.badRequest("attribute \(key) must be a number (\(unit))") }
        guard n >= 0, n <= 1e12, n == n.rounded() else {
            // As sent: -1, not -1.0 (JSON numbers are read as doubles).
            throw APIError.badRequest("attribute \(key) must be a whole number from 0 to 10^12 (\(unit)), not \(JSONNumberText.shortest(n))")
        }
        return Int64(n)
    }

    private func milliseconds(_ key: String) throws -> Duration { .milliseconds(try count(key, unit: "milliseconds")) }

    func effect() throws -> Effect {
        switch type {
        case "latency":
            return .link(.latency(try milliseconds("latency"), jitter: try milliseconds("jitter")))
        case "bandwidth":
            let rate = try count("rate", unit: "KB/s")
            return .link(.bandwidth(rate == 0 ? nil : DataRate(bitsPerSecond: Double(rate) * 8_000)))
        case "slicer":
            let size = try count("average_size", unit: "bytes")
            let variation = try count("size_variation", unit: "bytes")
            let delay = Duration.microseconds(try count("delay", unit: "microseconds"))
            return .link(.slice(size == 0 ? nil : Int(size), variation: Int(variation), delay: delay))
        case "loss":
            guard case .number(let p)? = attributes["percent"], p >= 0, p <= 100 else {
                throw APIError.badRequest("attribute percent must be a number from 0 to 100")
            }
            return .link(.loss(.percent(p)))
        case "profile":
            guard case .string(let name)? = attributes["name"], let profile = LinkProfile.named(name) else {
                throw APIError.badRequest("attribute name must be a link profile: \(LinkProfile.all.map(\.name).joined(separator: ", "))")
            }
            return .link(.profile(profile.link))
        default:
            guard let mapping else { throw APIError.badRequest("invalid toxic type: \(type)") }
            return .faults(try faultSteps(mapping) { key, unit in try count(key, unit: unit) })
        }
    }

    /// The fault rules to add to a running relay.
    func faultRules() -> [FaultRule] {
        guard case .faults(let steps)? = try? effect(), toxicity > 0 else { return [] }
        let p = Probability(fraction: toxicity)
        // One rule for new and open connections alike: the relay times an `after` rule from
        // each connection's opening, or from the rule's arrival for connections already open.
        return steps.map { step in
            switch step {
            case .now(let kind): FaultRule(kind, probability: p)
            case .after(let kind, let delay): FaultRule(kind, trigger: .after(delay), probability: p)
            }
        }
    }

    /// True for toxics that shape the link (latency, bandwidth, slicer, loss, profile) rather than
    /// inject faults.
    var isLinkToxic: Bool {
        if case .link? = try? effect() { return true }
        return false
    }

    /// The link model made by a proxy's toxics (profiles first, so other toxics refine them).
    /// Link toxics with toxicity 0 do nothing; any other toxicity applies them to every
    /// connection.
    ///
    /// Several toxics of one type on one stream act together, as in Toxiproxy's chain, where
    /// each toxic passes its output to the next: latencies add up (and so do jitters, the widest
    /// the sum of two uniform ones reaches), the lowest rate limits, losses compound
    /// (1 − Π(1 − p)), and the smallest slices are what comes out. Before, the last one added
    /// replaced the others while the API still listed them all.
    static func link(of toxics: [Toxic]) -> LinkConfiguration {
        var link = LinkConfiguration.unimpaired
        let effects = toxics.filter { $0.toxicity > 0 }.compactMap { toxic -> (Direction, LinkChange)? in
            guard case .link(let change)? = try? toxic.effect() else { return nil }
            return (toxic.stream.direction, change)
        }
        for case (_, .profile(let profile)) in effects { link = profile }
        for direction in Direction.allCases {
            link[direction].combine(effects.filter { $0.0 == direction }.map(\.1))
        }
        return link
    }
}

extension DirectionLink {
    /// Applies a stream's link toxics, each type's toxics combined (see ``Toxic/link(of:)``).
    fileprivate mutating func combine(_ changes: [Toxic.LinkChange]) {
        var latencies: [(Duration, Duration)] = [], rates: [DataRate?] = [], slices: [(size: Int?, variation: Int, delay: Duration)] = []
        var losses: [Probability] = []
        for change in changes {
            switch change {
            case .latency(let latency, let jitter): latencies.append((latency, jitter))
            case .bandwidth(let rate): rates.append(rate)
            case .slice(let size, let variation, let delay): slices.append((size, variation, delay))
            case .loss(let p): losses.append(p)
            case .profile: break
            }
        }
        if !latencies.isEmpty {
            latency = latencies.reduce(.zero) { $0 + $1.0 }
            jitter = latencies.reduce(.zero) { $0 + $1.1 }
        }
        if !rates.isEmpty { bandwidth = rates.compactMap { $0 }.min() }  // rate 0 (nil) caps nothing
        if !slices.isEmpty {
            let smallest = slices.filter { $0.size != nil }.min { $0.size! < $1.size! }
            sliceSize = smallest?.size
            sliceVariation = smallest?.variation ?? 0
            sliceDelay = smallest?.delay ?? .zero
        }
        if !losses.isEmpty {
            let kept = losses.reduce(1.0) { $0 * (1 - $1.fraction) }
            loss = kept < 1 ? .bernoulli(Probability(fraction: 1 - kept)) : nil
        }
    }
}
