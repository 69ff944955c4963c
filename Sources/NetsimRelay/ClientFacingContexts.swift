import NIOConcurrencyHelpers
import NetsimCore
import NIOSSL
import NetsimTLS

/// An interception's client-facing TLS contexts: one for clients that reached a loopback address
/// (or an address netsim does not know), and one per other address clients reached, whose leaf
/// for a client without SNI names that address too.
///
/// QA 62: a client without SNI (one that connects by IP address) was shown a leaf for
/// localhost, 127.0.0.1 and ::1 only, so a device that reached the host at 10.0.2.2 — or a
/// proxy's `CONNECT 10.1.2.3:443` — could not verify it. NIOSSL's certificate callback is told
/// the SNI and nothing of the connection, so the address is the context's: a context is costly
/// to make, hence made once per address. There are few: the host's own addresses for a relay,
/// one destination for each of a proxy's relays.
final class ClientFacingContexts: Sendable {
    private let interception: TLSInterception
    private let loopback: NIOSSLContext
    private let byAddress = NIOLockedValueBox<[ServerName: NIOSSLContext]>([:])

    init(_ interception: TLSInterception) throws {
        self.interception = interception
        loopback = try NIOSSLContext(configuration: interception.clientFacing)
    }

    /// The context for a client that reached `address` (nil: not known).
    func context(reaching address: ServerName?) throws -> NIOSSLContext {
        guard let address, !ServerName.loopback.contains(address) else { return loopback }
        return try byAddress.withLockedValue { made in
            if let context = made[address] { return context }
            let context = try NIOSSLContext(configuration: interception.clientFacing(reaching: address))
            made[address] = context
            return context
        }
    }
}

extension Relay {
    /// The address the client of connection `id` reached, which its leaf names when it sends no
    /// SNI: for a proxy's relay, the CONNECT's destination when that is an address; for others,
    /// the address the client connected to (the listening address, or with a wildcard listener
    /// the one of the host's addresses it reached). nil for a destination by name.
    func addressReached(by id: ConnectionID) -> ServerName? {
        if configuration.forProxyClients { return ServerName.address(configuration.upstream.host) }
        // The pair on the client's TCP connection: the wire layer of an intercepted one, or a
        // whole one (a `bad-cert` without interception).
        return lock.withLock { pairs[id] }?.client.channel?.localAddress.flatMap { ServerName(reached: $0) }
    }
}
