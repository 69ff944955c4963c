import NetsimCore

/// `cut=BYTES[,rst]`: the next answer is cut after BYTES of its body (counted on the wire after
/// the end of the response head, chunk framing included), then the connection ends with FIN, or
/// RST with `,rst` — OkHttp MockWebServer's DISCONNECT_DURING_RESPONSE_BODY.
public struct Cut: Fault {
    public static let name = "cut"
    public static let syntax = "=BYTES[,rst]"
    public static let example = "cut=1KB,rst"
    public static let scope = FaultScope.connection
    public static let summary = "the answer's body stops after BYTES, then EOF (or ECONNRESET with rst): a short read"
    public static let toxic: ToxicMapping? = ToxicMapping("cut", origin: .netsim, attributes: [.init("bytes", .bytes), .init("close", .choice(["fin", "rst"]))]) {
        arguments throws(ToxicMapping.Invalid) in
        [.now(.cut(bytes: arguments.bytes("bytes"), arguments.string("close") == "rst" ? .rst : .fin))]
    }

    public var bytes: Int
    public var close: CloseKind
    public init(bytes: Int, _ close: CloseKind = .fin) {
        self.bytes = bytes
        self.close = close
    }
    public init(argument: String?) throws(FaultArgumentError) {
        var text = try FaultArgumentError.required(argument, for: Self.name)
        close = .fin
        if text.hasSuffix(",rst") {
            close = .rst
            text.removeLast(4)
        } else if text.hasSuffix(",fin") {
            text.removeLast(4)
        }
        bytes = try FaultArgumentError.unit(text, for: Self.name) { try ByteCount(parsing: $0).bytes }
    }
    public var argument: String? { close == .rst ? "\(bytes),rst" : String(bytes) }

    public func makeEffect() -> any FaultEffect { Effect(budget: bytes, close: close) }

    struct Effect: FaultEffect {
        let budget: Int
        let close: CloseKind
        /// How much of "\r\n\r\n" the bytes seen so far end with (4: the head is over).
        var headMatched = 0
        var bodySeen = 0
        var ended = false
        var inspectsBytes: Bool { true }

        mutating func applied<Chunk: ByteChunk>(to connection: inout ConnectionMachine<Chunk>, atAccept: Bool) -> EffectLifetime {
            connection.fire("the next answer stops after \(budget) bytes of its body, then \(close.rawValue.uppercased())")
            return .stays
        }

        mutating func bytes<Chunk: ByteChunk>(_ chunk: Chunk, _ direction: Direction, on connection: inout ConnectionMachine<Chunk>) -> ByteVerdict {
            guard direction == .down else { return .pass }
            guard !ended else { return .swallow }
            var headBytes = 0
            if headMatched < 4 {
                headBytes = chunk.count
                for (offset, byte) in chunk.bytes.enumerated() {
                    headMatched = byte == Self.terminator[headMatched] ? headMatched + 1 : (byte == 13 ? 1 : 0)
                    if headMatched == 4 {
                        headBytes = offset + 1
                        break
                    }
                }
                if headMatched < 4 { return .pass }
            }
            let body = chunk.count - headBytes
            if bodySeen + body < budget || body == 0 {
                bodySeen += body
                return .pass
            }
            ended = true
            let keep = headBytes + (budget - bodySeen)
            return .cut(keep: keep, then: .init(close, "cut the answer after \(budget) bytes of its body"))
        }

        private static let terminator: [UInt8] = [13, 10, 13, 10]
    }
}

extension FaultKind {
    public static func cut(bytes: Int, _ close: CloseKind = .fin) -> FaultKind { FaultKind(Cut(bytes: bytes, close)) }
}
