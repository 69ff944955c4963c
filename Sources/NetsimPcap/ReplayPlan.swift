/// What a replay server answers, built from the selected flows of a capture.
///
/// HTTP exchanges from every selected flow are pooled and matched by method and target: the
/// n-th request for `GET /x` gets the n-th captured answer to `GET /x` (in capture order),
/// starting over after the last. A target with no exact match falls back to the same path
/// without its query. Non-HTTP flows are replayed whole, one per connection, in capture order.
public struct ReplayPlan: Sendable {
    public struct RawConversation: Sendable {
        public var flow: Int
        public var turns: [RawTurn]
        public var serverClose: ServerClose?
    }

    public var exchanges: [CapturedExchange]
    public var raw: [RawConversation]
    /// Things worth telling the person running the replay.
    public var notes: [String]

    public init(exchanges: [CapturedExchange], raw: [RawConversation], notes: [String] = []) {
        self.exchanges = exchanges
        self.raw = raw
        self.notes = notes
    }

    /// Throws when the selection is empty or holds nothing to replay.
    public init(capture: Capture, flows selector: FlowSelector = .all) throws {
        let flows = try selector.select(from: capture)
        var exchanges: [CapturedExchange] = []
        var raw: [RawConversation] = []
        var notes = capture.notes
        for flow in flows {
            switch Conversation(flow) {
            case .http(let found):
                exchanges += found
                for exchange in found {
                    guard let cut = exchange.uncapturedFrom else { continue }
                    let what = cut == 0
                        ? "the answer's start was never captured (its status line is in a gap of the capture); replay resets the connection without answering"
                        : "the answer's bytes from \(cut) of \(exchange.response.count) were never captured; replay sends those before them, then resets the connection"
                    notes.append("flow \(flow.number) #\(exchange.index) (\(exchange.method) \(exchange.target)): \(what)")
                }
                let unanswered = found.filter { $0.status == nil && $0.uncapturedFrom == nil }.count
                if unanswered > 0 { notes.append("flow \(flow.number): \(unanswered) request\(unanswered == 1 ? "" : "s") never answered in the capture; replay will not answer them either") }
            case .raw(let turns, let close):
                if turns.contains(where: { !$0.fromClient }) || close != nil {
                    raw.append(RawConversation(flow: flow.number, turns: turns, serverClose: close))
                }
                // A TLS handshake is never the same twice: the client's hello differs in size and
                // bytes, so the turns never line up (QA 68: curl hung on it, nothing said).
                if let hello = turns.first(where: \.fromClient)?.bytes, hello.starts(with: [0x16, 0x03]) {
                    notes.append("flow \(flow.number) starts with a TLS ClientHello: TLS cannot be replayed byte for byte (each handshake differs); a client will wait on it. Capture the plain HTTP instead (netsim run --pcap records the relay's upstream leg unencrypted when the upstream is plain)")
                }
            }
        }
        exchanges.sort { $0.requestTime < $1.requestTime }
        if let note = Self.serversNote(flows, replayed: Set(exchanges.map(\.flow)).union(raw.map(\.flow))) { notes.append(note) }
        guard !exchanges.isEmpty || !raw.isEmpty else {
            if capture.truncatedSegments > 0 {
                // The server's data is there but its messages are not whole: say why.
                throw PcapError(.nothingToUse, "\(capture.path): no whole HTTP message to replay: the capture's snaplen (\(capture.cutLength) bytes) cut \(capture.truncatedSegments) TCP segments short; replay needs whole packets: capture again with a full snaplen (tcpdump -s 0, tshark -s 0; both default to it)")
            }
            throw PcapError(.nothingToUse, "\(capture.path): the selected flows carry no server data to replay")
        }
        self.init(exchanges: exchanges, raw: raw, notes: notes)
    }

    /// When the flows replayed (HTTP exchanges or raw conversations) come from more than one
    /// server: a capture netsim (or any relay) recorded holds every exchange twice, once per leg,
    /// and replaying both serves each answer twice with two think times (the client leg's
    /// includes the link's delay). Raw flows were listed with no word of it (QA 54).
    static func serversNote(_ flows: [TCPFlow], replayed: Set<Int>) -> String? {
        var servers: [PacketEndpoint] = []
        for flow in flows where replayed.contains(flow.number) && !servers.contains(flow.server) { servers.append(flow.server) }
        guard servers.count > 1 else { return nil }
        let named = servers.prefix(4).map { "\($0)" }.joined(separator: ", ") + (servers.count > 4 ? ", …" : "")
        return "the answers pooled come from \(servers.count) servers (\(named)); a relay's capture "
            + "(netsim run/relay --pcap records both legs) holds every exchange twice: replay one side with "
            + "--flow :PORT (the upstream's port for the server's own think times)"
    }

    /// A human listing: one line per exchange or raw flow.
    public var listing: [String] {
        exchanges.map { e in
            let status = e.status.map(String.init) ?? (e.uncapturedFrom == 0 ? "an answer whose start was never captured" : "no answer")
            let close = e.serverClose.map { " then server \($0.kind.rawValue.uppercased()) after \(formatMilliseconds($0.after))" } ?? ""
            let cut = e.uncapturedFrom.map { $0 == 0 ? " (replayed as a reset)" : " (bytes from \($0) never captured: served up to them, then reset)" } ?? ""
            // Answers to one target are told apart by the range asked for (QA 68: 34 alike lines).
            let range = HTTPFraming.head(e.request[...])?.field("Range").map { " (Range: \($0))" } ?? ""
            return "flow \(e.flow) #\(e.index): \(e.method) \(e.target)\(range) → \(status), \(e.response.count) bytes, think \(formatMilliseconds(e.thinkTime))\(close)\(cut)"
        } + raw.map { r in
            let up = r.turns.filter(\.fromClient).reduce(0) { $0 + $1.bytes.count }
            let down = r.turns.filter { !$0.fromClient }.reduce(0) { $0 + $1.bytes.count }
            return "flow \(r.flow): raw, \(r.turns.count) turns, \(up) bytes from the client, \(down) from the server"
        }
    }
}

func formatMilliseconds(_ nanoseconds: Int64) -> String {
    let ms = Double(nanoseconds) / 1e6
    if ms >= 1000 { return String(format1: ms / 1000) + " s" }
    return String(format1: ms) + " ms"
}

extension String {
    /// One decimal, without Foundation's locale-dependent formatting.
    init(format1 value: Double) {
        let tenths = (value * 10).rounded()
        let whole = Int(tenths / 10)
        let fraction = Int(abs(tenths.truncatingRemainder(dividingBy: 10)))
        self = "\(tenths < 0 && whole == 0 ? "-" : "")\(whole).\(fraction)"
    }
}
