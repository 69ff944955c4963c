import NIOConcurrencyHelpers
import NIOSSL
import NetsimCore
import NetsimTLS

/// A relay's `bad-cert` TLS contexts: one per kind of wrong certificate and address its clients
/// reached, made on first use. A client without SNI (one that connects by IP address) is shown a
/// certificate that also names the address it reached, so that it is wrong only in the fault's
/// way: a device that reached the host at 10.0.2.2 was shown one for loopback only, and refused
/// an `expired` certificate for its host too (QA 62). Few contexts: the kinds a scenario uses,
/// times the host's addresses.
final class BadCertContexts: Sendable {
    private struct Key: Hashable {
        var kind: BadCertificateKind
        /// nil: a loopback address, or one not known.
        var address: ServerName?
    }

    private struct State {
        var contexts: [Key: NIOSSLContext] = [:]
        /// The relay's own CA, when its configuration gives none.
        var ownAuthority: CertificateAuthority?
    }

    private let state = NIOLockedValueBox(State())

    /// The context for `kind` and a client that reached `address`, from `authority` (or a CA of
    /// the relay's own). Its sessions' secrets go to `keyLog`, where interception's go (the pcap's
    /// `.keys`), so Wireshark shows what a client that took the certificate sent and got (QA 48).
    func context(_ kind: BadCertificateKind, reaching address: ServerName?, authority given: CertificateAuthority?,
                 keyLog: NIOSSLKeyLogCallback?) throws -> NIOSSLContext {
        let key = Key(kind: kind, address: address.flatMap { ServerName.loopback.contains($0) ? nil : $0 })
        return try state.withLockedValue { state in
            if let made = state.contexts[key] { return made }
            let authority: CertificateAuthority
            if let given {
                authority = given
            } else if let own = state.ownAuthority {
                authority = own
            } else {
                authority = try CertificateAuthority.ephemeral(commonName: "netsim relay CA (bad-cert)")
                state.ownAuthority = authority
            }
            var bad = try authority.badServerConfiguration(kind, reaching: key.address)
            bad.keyLogCallback = keyLog
            let made = try NIOSSLContext(configuration: bad)
            state.contexts[key] = made
            return made
        }
    }
}
