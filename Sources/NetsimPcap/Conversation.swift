import NetsimCore

/// How the server ended a captured connection, when it (not the client) closed first.
public struct ServerClose: Sendable, Equatable {
    public var kind: CloseKind
    /// From the server's last byte (or the request it never answered) to its FIN or RST.
    public var after: Int64
}

/// One captured HTTP request and the server's answer, byte for byte, with its timing.
public struct CapturedExchange: Sendable {
    public var flow: Int
    /// 1, 2, … within the flow.
    public var index: Int
    public var method: String
    public var target: String
    /// nil when the server never answered in the capture.
    public var status: Int?
    public var request: [UInt8]
    /// The whole answer as the server sent it (interim 1xx answers included).
    public var response: [UInt8]
    /// The answer's body ran until the server closed (no length): replay must close after it.
    public var responseEndsAtClose: Bool
    /// From the request's last byte to the answer's first (after ``earlyAnswer``), as seen at
    /// the capture point.
    public var thinkTime: Int64
    /// Where each captured piece of the answer starts, and when, relative to its first byte.
    public var pacing: [(offset: Int, delay: Int64)]
    /// Set on the last exchange of a connection the server closed.
    public var serverClose: ServerClose?
    /// When the request's first byte was captured (orders exchanges across flows).
    public var requestTime: Int64
    /// How many leading bytes of ``response`` are interim answers the server sent before the
    /// request had all arrived: a `100 Continue` to `Expect: 100-continue`, which the client
    /// waits for before it sends the body. Replay sends them once the request's head is in.
    public var earlyAnswer: Int = 0
    /// The offset in ``response`` of its first byte the capture never had (lost before the
    /// capture point, or dropped by it; zero-filled there): replay sends what comes before and
    /// resets the connection, as a transfer cut there would end. It served the zeros in a 200.
    public var uncapturedFrom: Int?
}

/// One turn of a non-HTTP conversation: bytes one side sent before the other spoke.
public struct RawTurn: Sendable {
    public var fromClient: Bool
    public var bytes: [UInt8]
    public var start: Int64
    public var end: Int64
}

/// A captured flow as something to replay.
public enum Conversation: Sendable {
    case http([CapturedExchange])
    case raw(turns: [RawTurn], serverClose: ServerClose?)

    /// Reads a flow: HTTP when the client's bytes start with a request line, raw otherwise.
    public init(_ flow: TCPFlow) {
        let requestBytes = flow.request.bytes
        guard HTTPFraming.looksLikeRequest(requestBytes[...]) else {
            self = .raw(turns: Self.turns(flow), serverClose: Self.serverClose(flow, lastServerByte: flow.response.chunks.last.map { $0.time }))
            return
        }
        var exchanges: [CapturedExchange] = []
        var at = 0
        var responseAt = 0
        let response = flow.response.bytes
        while at < requestBytes.count {
            let (method, target, framed) = HTTPFraming.request(requestBytes[at...])
            guard case .message(let request) = framed else { break }
            let requestRange = at..<(at + request.length)
            at += request.length
            var answer = responseAt..<responseAt
            var status: Int?
            var endsAtClose = false
            var early = 0
            let requestEnd = flow.request.time(at: requestRange.upperBound - 1) ?? flow.firstTime
            // Interim 1xx answers belong to the same exchange.
            while responseAt < response.count {
                let (code, result) = HTTPFraming.response(response[responseAt...], method: method, atEnd: true)
                guard case .message(let message) = result else {
                    if case .needMore = result, code != 0 {
                        // The capture ends inside the body: replay what there is, then close.
                        answer = answer.lowerBound..<response.count
                        responseAt = response.count
                        (status, endsAtClose) = (code, true)
                    }
                    break
                }
                let interimBefore = responseAt - answer.lowerBound == early
                responseAt += message.length
                answer = answer.lowerBound..<responseAt
                status = code
                endsAtClose = message.endsAtClose
                if !(100...199).contains(code) || code == 101 { break }
                if interimBefore, let sent = flow.response.time(at: responseAt - 1), sent < requestEnd {
                    early = responseAt - answer.lowerBound
                }
            }
            if status == nil, answer.isEmpty, responseAt < response.count, flow.response.missing.contains(where: { $0.contains(responseAt) }) {
                // The answer's start was never captured (its status line is in a gap): what
                // follows cannot be framed, so the rest of the flow is this answer, cut at 0 —
                // replay resets as for any gap. It was "no answer", and a client waited forever.
                answer = responseAt..<response.count
                responseAt = response.count
                endsAtClose = true
            }
            let answerStart = answer.count > early ? flow.response.time(at: answer.lowerBound + early) : nil
            exchanges.append(CapturedExchange(
                flow: flow.number, index: exchanges.count + 1, method: method, target: target, status: status,
                request: Array(requestBytes[requestRange]), response: Array(response[answer]), responseEndsAtClose: endsAtClose,
                thinkTime: max(0, (answerStart ?? requestEnd) - requestEnd),
                pacing: flow.response.chunks(in: answer).map { ($0.offset - answer.lowerBound, max(0, $0.time - (answerStart ?? $0.time))) },
                serverClose: nil, requestTime: flow.request.time(at: requestRange.lowerBound) ?? flow.firstTime,
                earlyAnswer: early,
                uncapturedFrom: flow.response.missing.first { $0.overlaps(answer) }.map { max($0.lowerBound, answer.lowerBound) - answer.lowerBound }))
        }
        if !exchanges.isEmpty {
            let last = exchanges[exchanges.count - 1]
            let lastByte = last.response.isEmpty
                ? flow.request.time(at: at - 1)
                : flow.response.time(at: responseAt - 1)
            exchanges[exchanges.count - 1].serverClose = Self.serverClose(flow, lastServerByte: lastByte)
        }
        self = .http(exchanges)
    }

    /// The server's FIN or RST, if it came before any from the client.
    static func serverClose(_ flow: TCPFlow, lastServerByte: Int64?) -> ServerClose? {
        guard let first = flow.packets.first(where: { !$0.flags.isDisjoint(with: [.fin, .rst]) }), !first.fromClient else { return nil }
        let kind: CloseKind = first.flags.contains(.rst) ? .rst : .fin
        return ServerClose(kind: kind, after: max(0, first.time - (lastServerByte ?? first.time)))
    }

    /// Both directions' bytes merged in capture order, each direction kept in stream order.
    static func turns(_ flow: TCPFlow) -> [RawTurn] {
        var turns: [RawTurn] = []
        var c = 0
        var s = 0
        let up = flow.request.chunks
        let down = flow.response.chunks
        while c < up.count || s < down.count {
            let takeClient = s >= down.count || c < up.count && up[c].time <= down[s].time
            let chunk = takeClient ? up[c] : down[s]
            let source = takeClient ? flow.request.bytes : flow.response.bytes
            let bytes = source[chunk.offset..<(chunk.offset + chunk.length)]
            if takeClient { c += 1 } else { s += 1 }
            if let last = turns.last, last.fromClient == takeClient {
                turns[turns.count - 1].bytes += bytes
                turns[turns.count - 1].end = chunk.time
            } else {
                turns.append(RawTurn(fromClient: takeClient, bytes: Array(bytes), start: chunk.time, end: chunk.time))
            }
        }
        return turns
    }
}
