import Foundation
import NetsimCore

/// `cut=BYTES[,fin|rst]`: the next answer is cut after BYTES of its body (counted on the wire
/// after the end of the response head, chunk framing included), then the connection ends with
/// FIN (`,fin`, the default), or RST with `,rst` — OkHttp MockWebServer's
/// DISCONNECT_DURING_RESPONSE_BODY.
public struct Cut: Fault {
    public static let name = "cut"
    public static let syntax = "=BYTES[,fin|rst]"
    public static let example = "cut=1KB,rst"
    public static let scope = FaultScope.connection
    public static let summary = "the answer's body stops after BYTES, then EOF (or ECONNRESET with rst): a short read"
    public static let toxic: ToxicMapping? = ToxicMapping("cut", origin: .netsim, attributes: [.init("bytes", .bytes), .init("close", .choice(["fin", "rst"]))]) {
        arguments throws(ToxicMapping.Invalid) in
        try arguments.requireDownstream("cut", "cuts the answer")
        return [.now(.cut(bytes: arguments.bytes("bytes"), arguments.string("close") == "rst" ? .rst : .fin))]
    }

    public var bytes: Int
    public var close: CloseKind
    public init(bytes: Int, _ close: CloseKind = .fin) {
        self.bytes = bytes
        self.close = close
    }
    public init(argument: String?) throws(FaultArgumentError) {
        let (text, option) = try FaultArgumentError.option(
            FaultArgumentError.required(argument, for: Self.name), for: Self.name, value: "a byte count", options: ["fin", "rst"])
        close = option == "rst" ? .rst : .fin
        bytes = try FaultArgumentError.unit(text, for: Self.name) { try ByteCount(parsing: $0).bytes }
    }
    public var argument: String? { close == .rst ? "\(bytes),rst" : String(bytes) }

    public func makeEffect() -> any FaultEffect { Effect(budget: bytes, close: close) }

    /// Follows the answers on the connection: their heads (to the blank line), their bodies (to
    /// `Content-Length`, when the head has one), and cuts the first whose body reaches the budget.
    /// A kept-alive connection's shorter answers pass whole and each next one counts from its
    /// own head. Before, the count ran on across answers, and a later answer's head counted as
    /// body, so it was cut short of BYTES. An answer without `Content-Length` (chunked, or
    /// ended by the close) is followed to the end of the connection.
    struct Effect: FaultEffect {
        let budget: Int
        let close: CloseKind
        /// How much of "\r\n\r\n" the bytes seen so far end with (4: the head is over).
        var headMatched = 0
        /// The current answer's head so far (at most ``headLimit`` bytes), for its length.
        var head: [UInt8] = []
        /// The current answer's body length from its head; nil: unknown (to the close).
        var answerLength: Int?
        var bodySeen = 0
        var ended = false
        /// The answers are not HTTP/1 (TLS passed through, a CONNECT tunnel, another protocol):
        /// there is no body to count, and the log says so instead of the fault sitting armed.
        var notHTTP = false
        var inspectsBytes: Bool { true }

        static let headLimit = 16 * 1024

        mutating func applied<Chunk: ByteChunk>(to connection: inout ConnectionMachine<Chunk>, atAccept: Bool) -> EffectLifetime {
            connection.fire("the next answer stops after \(budget) bytes of its body, then \(close.rawValue.uppercased())")
            return .stays
        }

        mutating func bytes<Chunk: ByteChunk>(_ chunk: Chunk, _ direction: Direction, on connection: inout ConnectionMachine<Chunk>) -> ByteVerdict {
            guard direction == .down, !notHTTP else { return .pass }
            guard !ended else { return .swallow }
            let bytes = chunk.bytes
            var position = 0
            while position < bytes.count {
                if headMatched < 4 {
                    if head.count < Self.statusPrefix.count, !Self.couldBeStatusLine(head + bytes[position...].prefix(Self.statusPrefix.count)) {
                        notHTTP = true
                        let what = head.isEmpty && bytes[position] == 0x16 ? "TLS" : "not HTTP/1"
                        connection.fire("the answer is \(what), so it has no body to count: \(Event.nothingDone) on this connection (cut acts on HTTP/1 answers; limit=BYTES cuts any stream, --tls intercept lets cut see inside TLS)")
                        return .pass
                    }
                    // In a head: up to its blank line.
                    while position < bytes.count, headMatched < 4 {
                        let byte = bytes[position]
                        headMatched = byte == Self.terminator[headMatched] ? headMatched + 1 : (byte == 13 ? 1 : 0)
                        if head.count < Self.headLimit { head.append(byte) }
                        position += 1
                    }
                    if headMatched == 4 { answerLength = Self.contentLength(in: head) }
                    continue
                }
                // In a body: the budget ends it here, or the answer ends whole.
                let available = bytes.count - position
                let left = answerLength.map { $0 - bodySeen } ?? Int.max
                if budget - bodySeen < min(available, left) {
                    ended = true
                    return .cut(keep: position + (budget - bodySeen), then: .init(close, "cut the answer after \(budget) bytes of its body"))
                }
                let taken = min(available, left)
                bodySeen += taken
                position += taken
                if let answerLength, bodySeen == answerLength {
                    // The answer is over within the budget: the next one counts afresh.
                    headMatched = 0
                    head.removeAll(keepingCapacity: true)
                    self.answerLength = nil
                    bodySeen = 0
                }
            }
            return .pass
        }

        /// Whether an answer's first bytes can start `HTTP/`.
        static func couldBeStatusLine(_ start: [UInt8]) -> Bool {
            zip(start, statusPrefix).allSatisfy { $0 == $1 }
        }

        private static let statusPrefix = Array("HTTP/".utf8)

        /// The `Content-Length` of a response head, if it has one.
        static func contentLength(in head: [UInt8]) -> Int? {
            let text = String(decoding: head, as: UTF8.self)
            for line in text.split(separator: "\r\n").dropFirst() {
                guard let colon = line.firstIndex(of: ":"), line[..<colon].lowercased() == "content-length" else { continue }
                return Int(line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            }
            return nil
        }

        private static let terminator: [UInt8] = [13, 10, 13, 10]
    }
}

extension FaultKind {
    public static func cut(bytes: Int, _ close: CloseKind = .fin) -> FaultKind { FaultKind(Cut(bytes: bytes, close)) }
}
