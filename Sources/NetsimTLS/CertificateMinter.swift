import Crypto
import Foundation
import X509

/// Builds the certificates netsim presents: its CA, leaves for the names clients ask for, and
/// the wrong certificates of the `bad-cert` fault. Every key is a fresh P-256 key; every
/// signature ECDSA with SHA-256; serial numbers are random.
enum CertificateMinter {
    /// How long a leaf is valid: short, as public CAs' leaves have become, and re-minted well
    /// before it ends (see ``CertificateAuthority``). It starts an hour back so a client whose
    /// clock is a little behind (a simulator, a VM) still accepts it.
    static let leafLifetime: TimeInterval = 7 * 24 * 3600
    static let backdate: TimeInterval = 3600
    /// The CA's lifetime: installing a CA on a device is a manual step nobody wants to repeat.
    static let authorityLifetime: TimeInterval = 10 * 365 * 24 * 3600

    static func authority(commonName: String, now: Date) throws -> (Certificate, P256.Signing.PrivateKey) {
        let key = P256.Signing.PrivateKey()
        let publicKey = Certificate.PublicKey(key.publicKey)
        let name = try DistinguishedName {
            OrganizationName("netsim")
            CommonName(commonName)
        }
        let extensions = try Certificate.Extensions {
            Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
            Critical(KeyUsage(digitalSignature: true, keyCertSign: true, cRLSign: true))
            SubjectKeyIdentifier(hash: publicKey)
        }
        let certificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: publicKey,
            notValidBefore: now - backdate, notValidAfter: now + authorityLifetime,
            issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: extensions, issuerPrivateKey: .init(key)
        )
        return (certificate, key)
    }

    /// A server certificate for `names` (the first is its common name), signed by `issuer`, or
    /// by its own key when `issuer` is nil (a self-signed certificate).
    static func leaf(
        names: [ServerName], issuer: (certificate: Certificate, key: P256.Signing.PrivateKey)?,
        notBefore: Date, notAfter: Date
    ) throws -> (Certificate, P256.Signing.PrivateKey) {
        let key = P256.Signing.PrivateKey()
        let publicKey = Certificate.PublicKey(key.publicKey)
        let subject = try DistinguishedName {
            OrganizationName("netsim")
            CommonName(names.first?.description ?? "netsim")
        }
        let issuerName = issuer?.certificate.subject ?? subject
        let signer = issuer.map { Certificate.PrivateKey($0.key) } ?? Certificate.PrivateKey(key)
        let authorityKeyID = issuer.flatMap { try? $0.certificate.extensions.subjectKeyIdentifier?.keyIdentifier }
        let extensions = try Certificate.Extensions {
            Critical(BasicConstraints.notCertificateAuthority)
            Critical(KeyUsage(digitalSignature: true))
            try ExtendedKeyUsage([.serverAuth])
            SubjectAlternativeNames(names.map(\.generalName))
            SubjectKeyIdentifier(hash: publicKey)
            if let authorityKeyID { AuthorityKeyIdentifier(keyIdentifier: authorityKeyID) }
        }
        let certificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: publicKey,
            notValidBefore: notBefore, notValidAfter: notAfter,
            issuer: issuerName, subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: extensions, issuerPrivateKey: signer
        )
        return (certificate, key)
    }
}
