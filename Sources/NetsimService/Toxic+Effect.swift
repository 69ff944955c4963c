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
            throw APIError.badRequest("attribute \(key) must be a whole number from 0 to 10^12 (\(unit)), not \(n)")
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
            _ = try count("size_variation", unit: "bytes")
            let delay = Duration.microseconds(try count("delay", unit: "microseconds"))
            return .link(.slice(size == 0 ? nil : Int(size), delay: delay))
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

    /// The link model made by a proxy's toxics, in the order they were added (profiles first, so
    /// other toxics refine them). Link toxics with toxicity 0 do nothing; any other toxicity
    /// applies them to every connection.
    static func link(of toxics: [Toxic]) -> LinkConfiguration {
        var link = LinkConfiguration.unimpaired
        let effects = toxics.filter { $0.toxicity > 0 }.compactMap { toxic -> (Direction, LinkChange)? in
            guard case .link(let change)? = try? toxic.effect() else { return nil }
            return (toxic.stream.direction, change)
        }
        for case (_, .profile(let profile)) in effects { link = profile }
        for (direction, change) in effects {
            switch change {
            case .latency(let latency, let jitter):
                link[direction].latency = latency
                link[direction].jitter = jitter
            case .bandwidth(let rate): link[direction].bandwidth = rate
            case .slice(let size, let delay):
                link[direction].sliceSize = size
                link[direction].sliceDelay = size == nil ? .zero : delay
            case .loss(let p): link[direction].loss = p.fraction > 0 ? .bernoulli(p) : nil
            case .profile: break
            }
        }
        return link
    }
}
