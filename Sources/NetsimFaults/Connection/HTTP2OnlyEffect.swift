import NetsimCore

/// The byte-level effect of a fault that acts on HTTP/2 streams and frames (`goaway`,
/// `rst-stream`, `max-streams`): the relay's HTTP/2 layer carries it out on connections it
/// intercepts and sees as h2. On any other connection it only says so in the log.
struct HTTP2OnlyEffect: FaultEffect {
    let name: String

    mutating func applied<Chunk: ByteChunk>(to connection: inout ConnectionMachine<Chunk>, atAccept: Bool) -> EffectLifetime {
        if !atAccept {
            connection.fire("\(name) acts on HTTP/2 connections the relay intercepts (--tls intercept; in a scenario, link: { tls: intercept }); this connection is not intercepted, or not HTTP/2: \(Event.nothingDone)")
        }
        return .done
    }
}

extension FaultKind {
    /// True for the faults that act only on HTTP/2 the relay intercepts (`goaway`, `max-streams`,
    /// `rst-stream`): a relay that does not intercept TLS never sees any, and they do nothing.
    public var actsOnInterceptedHTTP2Only: Bool { fault.makeEffect() is HTTP2OnlyEffect }
}
