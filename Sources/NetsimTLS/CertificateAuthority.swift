import Crypto
import Foundation
import NIOConcurrencyHelpers
import X509
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// netsim's own certificate authority: made on first use, kept in ``NetsimHome`` (certificate
/// `ca.pem`, key `ca-key.pem` with mode 0600), and the issuer of every leaf netsim presents.
///
/// A client trusts interception and the TLS upstream by trusting this one certificate, as it
/// would trust mitmproxy's or Charles's. Leaves are minted per name on demand and cached;
/// a cached leaf is replaced a day before it expires, so a long-running `netsim serve` never
/// presents an expired one.
public final class CertificateAuthority: Sendable {
    public let certificate: Certificate
    let privateKey: P256.Signing.PrivateKey
    /// Where the certificate is on disk (nil for a CA that lives only in memory).
    public let certificatePath: URL?
    /// The permission bits of `ca-key.pem` as loaded (0600, 0400 or 0700: those others have no
    /// access to); nil for a CA that lives only in memory. `netsim ca` shows them: it printed
    /// "(mode 0600)" whatever they were (QA 62).
    public let keyMode: Int?
    /// ``keyMode`` as chmod takes it: `0600`.
    public var keyModeText: String? { keyMode.map(CAFiles.modeText) }
    private let leaves = NIOLockedValueBox<[Set<ServerName>: (IssuedCertificate, Date)]>([:])
    /// The untrusted issuer of `bad-cert=untrusted`.
    let strangerBox = NIOLockedValueBox<CertificateAuthority?>(nil)
    /// The time by which handshakes pick their leaves (``serverConfiguration(protocols:keyLog:)``):
    /// the system's, or a test's, which moves a week on without waiting one.
    let clock: @Sendable () -> Date

    init(certificate: Certificate, privateKey: P256.Signing.PrivateKey, certificatePath: URL?, keyMode: Int?,
         clock: @escaping @Sendable () -> Date = { Date() }) {
        self.certificate = certificate
        self.privateKey = privateKey
        self.certificatePath = certificatePath
        self.keyMode = keyMode
        self.clock = clock
    }

    /// A CA that lives only in memory: for tests and for the `untrusted` bad certificate.
    /// `clock`: the time its server configurations mint and renew leaves by.
    public static func ephemeral(commonName: String = "netsim ephemeral CA", now: Date = Date(),
                                 clock: @escaping @Sendable () -> Date = { Date() }) throws -> CertificateAuthority {
        let (certificate, key) = try CertificateMinter.authority(commonName: commonName, now: now)
        return CertificateAuthority(certificate: certificate, privateKey: key, certificatePath: nil, keyMode: nil, clock: clock)
    }

    /// The CA kept in `home`, made there first if it has none (or, with `regenerate`, replaced).
    /// Processes that start at once agree on one CA: creation holds a lock file (reading a
    /// complete CA needs none, ``CAFiles/readOrCreate(in:regenerate:now:)``).
    public static func load(from home: NetsimHome, regenerate: Bool = false, now: Date = Date()) throws -> CertificateAuthority {
        try home.ensureExists()
        try home.refuseOthersWriting()
        let authority = try CAFiles.readOrCreate(in: home, regenerate: regenerate, now: now)
        try authority.refuseOutsideValidity(now: now)
        return authority
    }

    /// The certificate as PEM.
    public var pem: String {
        get throws { try certificate.serializeAsPEM().pemString + "\n" }
    }

    /// SHA-256 of the certificate's DER, as `AB:CD:…` (how browsers and `openssl x509 -fingerprint
    /// -sha256` show it).
    public var fingerprintSHA256: String {
        get throws {
            let der = try certificate.serializeAsPEM().derBytes
            return SHA256.hash(data: der).map { String(format: "%02X", $0) }.joined(separator: ":")
        }
    }

    /// A leaf for `name` (from SNI; nil when the client sent none, as for an IP address) that also
    /// names 127.0.0.1, ::1 and localhost. Minted on first use, then cached.
    ///
    /// - Parameter address: without SNI, the address the client reached, when netsim knows it:
    ///   named too, so a device that reaches the host at 10.0.2.2 can verify the leaf (QA 62).
    public func leaf(for name: ServerName?, reaching address: ServerName? = nil, now: Date = Date()) throws -> IssuedCertificate {
        var names = ServerName.loopback
        if let first = name ?? address, !names.contains(first) { names.insert(first, at: 0) }
        return try leaf(names: names, now: now)
    }

    /// A leaf for exactly these names (the first is its common name). Cached; replaced a day
    /// before it ends — unless it ends with the CA, when a new one could not end later.
    public func leaf(names: [ServerName], now: Date = Date()) throws -> IssuedCertificate {
        let key = Set(names)
        let end = try leafEnd(from: now)
        if let (cached, expiry) = leaves.withLockedValue({ $0[key] }), expiry.timeIntervalSince(now) > 24 * 3600 || expiry >= end {
            return cached
        }
        let issued = try issue(names: names, notBefore: now - CertificateMinter.backdate, notAfter: end)
        leaves.withLockedValue { $0[key] = (issued, end) }
        return issued
    }

    /// A leaf with the validity given (not cached): `bad-cert=expired` asks for one in the past.
    public func issue(names: [ServerName], notBefore: Date, notAfter: Date) throws -> IssuedCertificate {
        let (leaf, key) = try CertificateMinter.leaf(
            names: names, issuer: (certificate, privateKey), notBefore: notBefore, notAfter: notAfter)
        return try IssuedCertificate(chain: [leaf, certificate], privateKey: key)
    }
}
