import NetsimCore

/// `tls-stall`: the TCP connection is accepted and the TLS handshake never completes — the
/// client's ClientHello is taken and never answered, as by a middlebox that blocks TLS or a
/// server whose TLS stack hangs. Plain HTTP passes; so does TLS already past its handshake when
/// the fault arrives. The client sees a connection that connects, then a handshake timeout.
///
/// It acts on the client's TCP connection (with interception: on the encrypted bytes, before
/// netsim's own TLS termination sees them).
public struct TLSStall: Fault {
    public static let name = "tls-stall"
    public static let scope = FaultScope.connection
    public static let summary = "connects; a TLS ClientHello is never answered (plain HTTP passes)"

    public init() {}
    public init(argument: String?) throws(FaultArgumentError) { try FaultArgumentError.none(argument, for: Self.name) }

    public func makeEffect() -> any FaultEffect { Effect() }

    struct Effect: FaultEffect {
        /// Decided on the client's first bytes under the fault: a ClientHello stalls the
        /// connection for good (while the fault lasts).
        private var stalling: Bool?

        mutating func applied<Chunk: ByteChunk>(to connection: inout ConnectionMachine<Chunk>, atAccept: Bool) -> EffectLifetime { .stays }

        var inspectsBytes: Bool { true }

        mutating func bytes<Chunk: ByteChunk>(_ chunk: Chunk, _ direction: Direction, on connection: inout ConnectionMachine<Chunk>) -> ByteVerdict {
            guard direction == .up else { return stalling == true ? .swallow : .pass }
            if stalling == nil {
                let bytes = chunk.bytes
                let isClientHello = bytes.count >= 6 && bytes[0] == 0x16 && bytes[1] == 0x03 && bytes[5] == 0x01
                stalling = isClientHello
                if isClientHello {
                    let name = TLSClientHello.serverName(in: bytes).map { " for \($0)" } ?? ""
                    connection.fire("a TLS ClientHello\(name) is taken and never answered: the handshake never completes")
                }
            }
            return stalling == true ? .swallow : .pass
        }
    }
}

extension FaultKind {
    public static var tlsStall: FaultKind { FaultKind(TLSStall()) }
}
