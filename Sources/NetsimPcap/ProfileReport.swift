import NetsimCore

/// `netsim profile`'s output: a paragraph per flow and, with `--scn`, a `link:` block.
public enum ProfileReport {
    public static func text(_ profiles: [FlowProfile], capture: Capture) -> String {
        var lines = ["\(capture.path): \(capture.packetCount) packets, \(capture.linkTypeName), \(capture.flows.count) TCP flow\(capture.flows.count == 1 ? "" : "s")"]
        for note in capture.notes { lines.append("note: \(note)") }
        if LinkSuggestion.handshakesMadeUp(profiles) { lines.append("note: \(LinkSuggestion.madeUpNote)") }
        for p in profiles {
            lines.append("")
            let guessed = p.clientFromHandshake ? "" : " (no handshake captured: client guessed from the ports)"
            lines.append("flow \(p.flow): \(p.client) → \(p.server)\(guessed), \(p.application), \(p.packets) packets over \(formatMilliseconds(p.duration))")
            lines.append("  round trip: " + roundTrip(p))
            lines.append("  client → server: " + direction(p.toServer))
            lines.append("  server → client: " + direction(p.toClient))
            // Where a Wireshark user looks: seconds since the capture's first packet.
            let origin = capture.firstTimestamp ?? p.startTime
            let gaps = p.idleGaps.map { "\(formatMilliseconds($0.length)) from \(String(format: "%.3f", Double(p.startTime + $0.start - origin) / 1e9)) s" }
            lines.append("  idle gaps (≥ 1 s): " + (gaps.isEmpty ? "none" : gaps.joined(separator: ", ") + " (times since the capture's first packet)"))
            lines.append("  close: " + p.close.description)
        }
        return lines.joined(separator: "\n")
    }

    static func roundTrip(_ p: FlowProfile) -> String {
        var parts: [String] = []
        if let rtt = p.handshakeRTT {
            var text = "handshake \(formatMilliseconds(rtt))"
            if let a = p.synToSynAck, let b = p.synAckToAck {
                text += " (SYN→SYN-ACK \(formatMilliseconds(a)), SYN-ACK→ACK \(formatMilliseconds(b)))"
            }
            parts.append(text)
        } else {
            parts.append("no handshake captured")
        }
        for (name, d) in [("client data", p.toServer), ("server data", p.toClient)] {
            if let m = median(d.ackRTT), let low = d.ackRTT.min() {
                parts.append("\(name) ACKed after \(formatMilliseconds(m)) median, \(formatMilliseconds(low)) min (\(d.ackRTT.count) sample\(d.ackRTT.count == 1 ? "" : "s"))")
            }
        }
        return parts.joined(separator: "; ")
    }

    static func direction(_ d: DirectionProfile) -> String {
        var text = "\(d.bytes) bytes in \(d.dataSegments) data segment\(d.dataSegments == 1 ? "" : "s")"
        if let average = d.averageThroughput { text += ", \(rate(average)) average" }
        if let burst = d.burstThroughput { text += ", \(rate(burst)) while sending" }
        text += "; \(d.retransmissions) retransmission\(d.retransmissions == 1 ? "" : "s")"
        if d.retransmissions > 0 {
            var kinds: [String] = []
            if d.fastRetransmissions > 0 { kinds.append("\(d.fastRetransmissions) fast") }
            if d.spuriousRetransmissions > 0 { kinds.append("\(d.spuriousRetransmissions) spurious") }
            if !kinds.isEmpty { text += " (\(kinds.joined(separator: ", ")))" }
        }
        text += ", loss ≈ \(percent(d.lossRate))"
        if d.outOfOrder > 0 { text += ", \(d.outOfOrder) out of order" }
        if d.notCaptured > 0 { text += ", \(d.notCaptured) gap\(d.notCaptured == 1 ? "" : "s") not captured" }
        if d.duplicateAcks > 0 { text += ", \(d.duplicateAcks) duplicate ACK\(d.duplicateAcks == 1 ? "" : "s") sent" }
        return text
    }

    static func rate(_ bitsPerSecond: Double) -> String { DataRate(bitsPerSecond: significant(bitsPerSecond)).description }

    static func percent(_ fraction: Double) -> String {
        Probability(fraction: min(1, max(0, (fraction * 10_000).rounded() / 10_000))).description
    }

    /// Three significant digits: a measurement, not a spec.
    static func significant(_ value: Double) -> Double {
        guard value > 0 else { return value }
        var scale = 1.0
        while value / scale >= 1000 { scale *= 10 }
        while value / scale < 100 { scale /= 10 }
        return (value / scale).rounded() * scale
    }
}

/// A scenario `link:` block that reproduces what the capture shows, to paste into a `.scn`.
///
/// latency: half the round trip each way (the handshake RTT, else the slower direction's median
/// data/ACK time). loss: each direction's non-spurious retransmissions per data segment.
/// bandwidth: only when a direction sent at least ``minimumBurst`` bytes in one burst (less is
/// limited by the round trip, not the rate), as that direction's rate while sending; it is a
/// lower bound. Jitter is not inferred: delayed ACKs blur it.
public struct LinkSuggestion: Sendable {
    public var roundTrip: Int64?
    public var upLoss: Double
    public var downLoss: Double
    public var upBandwidth: Double?
    public var downBandwidth: Double?
    public var flows: [Int]
    /// See ``handshakesMadeUp(_:)``.
    public var madeUp = false

    public static let minimumBurst = 64 * 1024

    /// Every handshake took no time at all, SYN to ACK: no network does that (loopback takes
    /// tens of µs), netsim's own recordings do, as the relay makes each leg's handshake and ACKs
    /// up at its socket. Such a file shows netsim's delays between the legs, not in a round trip.
    public static func handshakesMadeUp(_ profiles: [FlowProfile]) -> Bool {
        let handshakes = profiles.compactMap(\.handshakeRTT)
        return !handshakes.isEmpty && handshakes.allSatisfy { $0 == 0 }
    }

    static let madeUpNote = "every handshake took 0 s, as in netsim's own recordings (the relay makes each leg's handshake and ACKs up at its socket): the round trip cannot be inferred from this file; the delays netsim added are between a connection's two legs"

    public init(_ profiles: [FlowProfile]) {
        flows = profiles.map(\.flow)
        let rtts = profiles.compactMap { p -> Int64? in
            p.handshakeRTT ?? [median(p.toServer.ackRTT), median(p.toClient.ackRTT)].compactMap { $0 }.max()
        }
        madeUp = Self.handshakesMadeUp(profiles)
        roundTrip = madeUp ? nil : median(rtts)
        func loss(_ d: KeyPath<FlowProfile, DirectionProfile>) -> Double {
            let segments = profiles.reduce(0) { $0 + $1[keyPath: d].dataSegments }
            let lost = profiles.reduce(0) { $0 + $1[keyPath: d].retransmissions - $1[keyPath: d].spuriousRetransmissions }
            return segments == 0 ? 0 : Double(lost) / Double(segments)
        }
        upLoss = loss(\.toServer)
        downLoss = loss(\.toClient)
        func bandwidth(_ d: KeyPath<FlowProfile, DirectionProfile>) -> Double? {
            profiles.filter { $0[keyPath: d].largestBurst >= Self.minimumBurst }.compactMap { $0[keyPath: d].burstThroughput }.max()
        }
        // In netsim's own recording each connection's upstream leg runs unshaped on loopback:
        // its bursts (gigabits) are not the link's rate (3.19gbit was suggested for a 1 Mbit/s
        // download), and which leg is which is not in the file.
        upBandwidth = madeUp ? nil : bandwidth(\.toServer)
        downBandwidth = madeUp ? nil : bandwidth(\.toClient)
    }

    /// The block, with a comment saying where it came from.
    public func scn(capture: String) -> String {
        var lines = ["# inferred by netsim profile from \(capture) (flow\(flows.count == 1 ? "" : "s") \(flows.map(String.init).joined(separator: ", ")))"]
        lines.append("link:")
        if let roundTrip {
            let oneWay = (roundTrip / 2 + 50_000) / 100_000 * 100_000  // to 0.1 ms
            lines.append("  latency: \(formatNanoseconds(max(oneWay, 100_000)))")
        } else if madeUp {
            lines.append("  # set latency by hand: \(Self.madeUpNote)")
            lines.append("  # set bandwidth by hand too: a recording's upstream legs run unshaped on loopback, so its bursts are not the link's rate")
        } else {
            lines.append("  # no round trip could be measured: set latency by hand")
        }
        for (name, loss, bandwidth) in [("up", upLoss, upBandwidth), ("down", downLoss, downBandwidth)] {
            var keys: [String] = []
            if let bandwidth { keys.append("bandwidth: \(ProfileReport.rate(bandwidth))") }
            if loss > 0 { keys.append("loss: \(ProfileReport.percent(loss))") }
            if !keys.isEmpty { lines.append("  \(name): { \(keys.joined(separator: ", ")) }") }
        }
        // Only comments under `link:` left it empty, which a scenario refuses ("'link' must be a
        // mapping, found nothing") once pasted in: an empty mapping keeps it valid.
        if !lines.dropFirst(2).contains(where: { !$0.hasPrefix("  #") }) { lines[1] = "link: {}" }
        return lines.joined(separator: "\n")
    }
}
