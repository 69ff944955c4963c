import NetsimCore

/// The relay's side of a fault that exists only on the packet path (``FaultPaths/packet``).
/// ``FaultRule/validate()`` refuses such a fault before any relay sees it; should one get through
/// anyway, it does nothing but say so in the event log.
struct PacketOnlyEffect: FaultEffect {
    let name: String
    mutating func applied<Chunk: ByteChunk>(to connection: inout ConnectionMachine<Chunk>, atAccept: Bool) -> EffectLifetime {
        connection.fire("\(name) acts on packets only (netsim shell); a relay cannot inject it: \(Event.nothingDone)")
        return .done
    }
}
