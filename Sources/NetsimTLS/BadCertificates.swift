import Foundation
import NIOConcurrencyHelpers
import NIOSSL
import NetsimCore

extension CertificateAuthority {
    /// The name a `wrong-host` certificate is issued for: never a name a client asks for.
    public static let wrongHostName = "wrong-host.netsim.invalid"

    /// A server configuration that answers every handshake with a certificate of `kind` for the
    /// name the client asked (SNI; the loopback names without one), made for that handshake —
    /// without SNI too: the one made with the configuration ended 7 days on (QA 62), and a
    /// `wrong-host` or `untrusted` certificate was then refused for its date as well.
    ///
    /// - Parameter address: the address its clients reached, named too for a client without
    ///   SNI (as ``presentingLeaves(in:reaching:)`` does): a device that reached the host at
    ///   10.0.2.2 was refused an `expired` certificate for naming only loopback (QA 62), a wrong
    ///   host besides the fault's expiry.
    public func badServerConfiguration(_ kind: BadCertificateKind, reaching address: ServerName? = nil) throws -> TLSConfiguration {
        let first = try badCertificate(kind, for: nil, reaching: address, now: clock())
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: first.nioChain.map { .certificate($0) }, privateKey: .privateKey(first.nioPrivateKey))
        configuration.applicationProtocols = [ApplicationProtocol.http1.rawValue]
        configuration.shutdownTimeout = .milliseconds(200)
        configuration.sslContextCallback = { [self] values, promise in
            do { promise.succeed(try badCertificate(kind, for: Self.serverName(values), reaching: address, now: clock()).configurationOverride) } catch { promise.fail(error) }
        }
        return configuration
    }

    /// One wrong certificate (a fresh key each time: these are not cached), for `name` — or,
    /// without SNI, `address` — and the loopback names; wrong in `kind`'s way only.
    public func badCertificate(_ kind: BadCertificateKind, for name: ServerName?, reaching address: ServerName? = nil,
                               now: Date = Date()) throws -> IssuedCertificate {
        var names = ServerName.loopback
        if let first = name ?? address, !names.contains(first) { names.insert(first, at: 0) }
        let start = now - CertificateMinter.backdate
        switch kind {
        case .selfSigned:
            let (leaf, key) = try CertificateMinter.leaf(names: names, issuer: nil, notBefore: start, notAfter: now + CertificateMinter.leafLifetime)
            return try IssuedCertificate(chain: [leaf], privateKey: key)
        case .expired:
            return try issue(names: names, notBefore: now - 30 * 86400, notAfter: now - 86400)
        case .wrongHost:
            return try issue(names: [.dns(Self.wrongHostName)], notBefore: start, notAfter: try leafEnd(from: now))
        case .untrusted:
            return try stranger().issue(names: names, notBefore: start, notAfter: now + CertificateMinter.leafLifetime)
        }
    }

    /// A CA no client trusts, made once per authority.
    private func stranger() throws -> CertificateAuthority {
        try strangerBox.withLockedValue { stranger in
            if let stranger { return stranger }
            let made = try CertificateAuthority.ephemeral(commonName: "an unknown CA (netsim bad-cert)")
            stranger = made
            return made
        }
    }
}
