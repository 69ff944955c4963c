import Crypto
import Foundation
import NetsimTLS
import Testing
import X509

/// A CA file that is not what it should be is named, with what is wrong and the way out (QA 62:
/// a directory read as "NSCocoaErrorDomain error 256", a truncated certificate as "not PEM (a
/// file starting with '-----BEGIN')", a missing key as "The file doesn't exist").
@Suite struct CAFileErrorTests {
    let home = TemporaryHome()

    /// The error `load` throws, as the one line people read.
    func loadError() -> String? {
        do {
            _ = try CertificateAuthority.load(from: home.home)
            return nil
        } catch {
            return "\(error)"
        }
    }

    var certificate: String { home.home.caCertificate.path }
    var key: String { home.home.caKey.path }
    let regenerate = "run `netsim ca --regenerate` to make a new CA (clients must trust the new one again)"

    @Test func aDirectoryInTheCertificatesPlaceIsSaidToBeOne() throws {
        _ = try CertificateAuthority.load(from: home.home)
        try FileManager.default.removeItem(atPath: certificate)
        try FileManager.default.createDirectory(atPath: certificate, withIntermediateDirectories: false)
        #expect(loadError() == "\(certificate) is a directory, not netsim's CA certificate; move it away, then \(regenerate)")
    }

    @Test func aTruncatedCertificateOrKeyIsDamagedNotNotPEM() throws {
        _ = try CertificateAuthority.load(from: home.home)
        let certificateText = try String(contentsOfFile: certificate, encoding: .utf8)
        let keyText = try String(contentsOfFile: key, encoding: .utf8)
        try home.write(String(certificateText.prefix(certificateText.count / 2)), to: home.home.caCertificate)
        #expect(loadError() == "\(certificate) is damaged or incomplete: it starts as PEM but does not read as a PEM certificate; \(regenerate)")
        try home.write(certificateText, to: home.home.caCertificate)
        try home.write(String(keyText.prefix(keyText.count / 2)), to: home.home.caKey)
        #expect(loadError() == "\(key) is damaged or incomplete: it starts as PEM but does not read as a PEM P-256 private key; \(regenerate)")
    }

    @Test func aMissingFileIsNamedBesideTheOther() throws {
        _ = try CertificateAuthority.load(from: home.home)
        let keyText = try String(contentsOfFile: key, encoding: .utf8)
        try FileManager.default.removeItem(atPath: key)
        #expect(loadError() == "\(key) is missing (\(certificate) is there without it); \(regenerate)")
        try home.write(keyText, to: home.home.caKey)
        try FileManager.default.removeItem(atPath: certificate)
        #expect(loadError() == "\(certificate) is missing (\(key) is there without it); \(regenerate)")
    }

    /// A home under a regular file (a typo in NETSIM_HOME) names the file in the way (QA 65:
    /// "NSCocoaErrorDomain error 512").
    @Test func aHomeUnderAFileNamesTheFile() throws {
        let file = try home.file("not-a-folder", "text")
        do {
            _ = try CertificateAuthority.load(from: NetsimHome(directory: URL(fileURLWithPath: file + "/netsim/home")))
            Issue.record("a CA was made under a file")
        } catch {
            #expect("\(error)" == "cannot write \(file)/netsim/home: \(file) is a file, not a directory")
        }
    }

    /// 0400 and 0700 are as private as 0600, and shown as they are.
    @Test(arguments: [0o400, 0o600, 0o700])
    func theKeysModeIsTheOneOnDisk(mode: Int) throws {
        #expect(try CertificateAuthority.load(from: home.home).keyModeText == "0600")
        #expect(chmod(key, mode_t(mode)) == 0)
        #expect(try CertificateAuthority.load(from: home.home).keyModeText == String(format: "%04o", mode))
    }

    /// A CA of another kind, a certificate that is no CA, a key under a passphrase: each is
    /// named for what it is (QA 65: the first and last were "damaged or incomplete", with
    /// `--regenerate` as the way out, which replaces a CA devices trust; the second was used).
    @Test func aCAOfAnotherKindANonCAOrAnEncryptedKeyIsNamedForWhatItIs() throws {
        _ = try CertificateAuthority.load(from: home.home)
        let ours = try String(contentsOfFile: certificate, encoding: .utf8)
        let ourKey = try P256.Signing.PrivateKey(pemRepresentation: String(contentsOfFile: key, encoding: .utf8))
        let name = try DistinguishedName { CommonName("another CA") }
        func signed(_ publicKey: Certificate.PublicKey, _ constraints: BasicConstraints, by issuer: Certificate.PrivateKey, _ algorithm: Certificate.SignatureAlgorithm) throws -> String {
            try Certificate(version: .v3, serialNumber: .init(), publicKey: publicKey, notValidBefore: Date() - 60, notValidAfter: Date() + 86_400,
                            issuer: name, subject: name, signatureAlgorithm: algorithm,
                            extensions: Certificate.Extensions { Critical(constraints) }, issuerPrivateKey: issuer).serializeAsPEM().pemString + "\n"
        }
        let p384 = P384.Signing.PrivateKey()
        try home.write(try signed(.init(p384.publicKey), .isCertificateAuthority(maxPathLength: nil), by: .init(p384), .ecdsaWithSHA384), to: home.home.caCertificate)
        #expect(loadError() == "\(certificate): its key is ECDSA P-384, and netsim's CA signs with a P-256 ECDSA key only; "
            + "to keep this CA as it is, point NETSIM_HOME at another folder; or \(regenerate)")
        try home.write(try signed(.init(ourKey.publicKey), .notCertificateAuthority, by: .init(ourKey), .ecdsaWithSHA256), to: home.home.caCertificate)
        #expect(loadError() == "\(certificate): it is not a CA certificate (its basicConstraints do not say CA:TRUE), so clients would refuse every certificate netsim signs with it; \(regenerate)")
        try home.write(ours, to: home.home.caCertificate)
        // No key at all inside: only the header is read (its body is "not a key: only its header is read").
        try home.write("-----BEGIN ENCRYPTED PRIVATE KEY-----\nbm90IGEga2V5OiBvbmx5IGl0cyBoZWFkZXIgaXMgcmVhZA==\n-----END ENCRYPTED PRIVATE KEY-----\n", to: home.home.caKey)
        #expect(chmod(key, 0o600) == 0)
        #expect(loadError()?.hasPrefix("\(key): it is encrypted with a passphrase, which netsim does not ask for; decrypt it (umask 077; openssl pkey") == true, "\(loadError() ?? "loaded")")
    }
}
