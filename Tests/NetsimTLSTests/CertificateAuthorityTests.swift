import Foundation
import NIOCore
import NetsimLoopback
import NetsimTLS
import Testing
import X509

/// netsim's CA on disk: made once, kept, shared by concurrent first users, replaced on request,
/// and clear errors for files that are not what they should be.
@Suite struct CertificateAuthorityTests {
    let home = TemporaryHome()

    @Test func madeOnFirstUseWithAPrivateKeyOnlyTheOwnerReads() throws {
        let authority = try CertificateAuthority.load(from: home.home)
        #expect(authority.certificatePath == home.home.caCertificate)
        #expect(try home.mode(of: home.home.caKey) == 0o600)
        #expect(try home.mode(of: home.home.directory) == 0o700)
        let again = try CertificateAuthority.load(from: home.home)
        #expect(try again.fingerprintSHA256 == authority.fingerprintSHA256)
        #expect(try authority.fingerprintSHA256.split(separator: ":").count == 32)
    }

    @Test func regenerateReplacesIt() throws {
        let first = try CertificateAuthority.load(from: home.home)
        let second = try CertificateAuthority.load(from: home.home, regenerate: true)
        #expect(try first.fingerprintSHA256 != second.fingerprintSHA256)
        #expect(try CertificateAuthority.load(from: home.home).fingerprintSHA256 == second.fingerprintSHA256)
        #expect(try home.mode(of: home.home.caKey) == 0o600)
    }

    @Test func concurrentFirstUsersAgreeOnOneCA() async throws {
        let fingerprints = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<8 {
                group.addTask { [home] in try CertificateAuthority.load(from: home.home).fingerprintSHA256 }
            }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(fingerprints.count == 1)
    }

    @Test func aFileThatIsNotPEMIsNamed() throws {
        try home.write("not a certificate\n", to: home.home.caCertificate)
        try home.write("not a key\n", to: home.home.caKey)
        #expect(throws: TLSSetupError.notPEM(home.home.caCertificate.path, expected: "a PEM certificate")) {
            try CertificateAuthority.load(from: home.home)
        }
        let other = try CertificateAuthority.ephemeral()
        try home.write(try other.pem, to: home.home.caCertificate)
        #expect(throws: TLSSetupError.notPEM(home.home.caKey.path, expected: "a PEM P-256 private key")) {
            try CertificateAuthority.load(from: home.home)
        }
    }

    @Test func aKeyOfAnotherCAIsRefused() throws {
        _ = try CertificateAuthority.load(from: home.home)
        let key = try String(contentsOf: home.home.caKey, encoding: .utf8)
        _ = try CertificateAuthority.load(from: home.home, regenerate: true)
        try home.write(key, to: home.home.caKey)
        #expect(throws: TLSSetupError.keyMismatch(certificate: home.home.caCertificate.path, key: home.home.caKey.path)) {
            try CertificateAuthority.load(from: home.home)
        }
    }

    @Test func leavesAreCachedPerNameAndCarryTheLoopbackNames() throws {
        let authority = try CertificateAuthority.ephemeral()
        let api = try authority.leaf(for: ServerName("API.Example.test."))
        #expect(try authority.leaf(for: ServerName("api.example.test")).leaf.serialNumber == api.leaf.serialNumber)
        #expect(try authority.leaf(for: ServerName("other.test")).leaf.serialNumber != api.leaf.serialNumber)
        let names = try #require(try api.leaf.extensions.subjectAlternativeNames).map { "\($0)" }
        #expect(names.count == 4)
        #expect(api.leaf.subject.description.contains("CN=api.example.test"))
        let lifetime = api.leaf.notValidAfter.timeIntervalSince(api.leaf.notValidBefore)
        #expect(lifetime > 24 * 3600 && lifetime <= 8 * 24 * 3600)
        #expect(api.leaf.issuer == authority.certificate.subject)
    }

    @Test func serverNamesParseAddressesAndNames() {
        #expect(ServerName("127.0.0.1") == .ip([127, 0, 0, 1]))
        #expect(ServerName("[::1]") == .ip(Array(repeating: 0, count: 15) + [1]))
        #expect(ServerName("::1").description == "::1")
        #expect(ServerName("Example.COM.") == .dns("example.com"))
        // SNI carries names only: an address (however written) is verified as an address.
        #expect(ServerName("api.example.test").sni == "api.example.test")
        #expect(ServerName("127.0.0.1").sni == nil && ServerName("::1").sni == nil)
        #expect(ServerName.sni(forEndpoint: "api.example.test:443") == "api.example.test")
        #expect(ServerName.sni(forEndpoint: "[::1]:443") == nil)
        #expect(ServerName.sni(forEndpoint: "10.0.0.7:8443") == nil)
    }

    /// The address a client reached, as it verifies it: an IPv4 client of a dual-stack socket
    /// reached 10.0.2.2, not ::ffff:10.0.2.2; a leaf for a client without SNI names it first.
    @Test func theAddressReachedIsNamedAsTheClientVerifiesIt() throws {
        #expect(ServerName(reached: try SocketAddress(ipAddress: "10.0.2.2", port: 443)) == .ip([10, 0, 2, 2]))
        #expect(ServerName(reached: try SocketAddress(ipAddress: "::ffff:10.0.2.2", port: 443)) == .ip([10, 0, 2, 2]))
        #expect(ServerName(reached: try SocketAddress(ipAddress: "fd00::7", port: 443)) == ServerName("fd00::7"))
        #expect(ServerName.address("10.1.2.3") == .ip([10, 1, 2, 3]) && ServerName.address("api.example.test") == nil)
        let authority = try CertificateAuthority.ephemeral()
        let leaf = try authority.leaf(for: nil, reaching: ServerName("10.0.2.2"))
        #expect(try #require(try leaf.leaf.extensions.subjectAlternativeNames).count == 4)
        #expect(leaf.leaf.subject.description.contains("CN=10.0.2.2"))
        // A name from SNI is what the client verifies: the address is not added to its leaf.
        #expect(try authority.leaf(for: ServerName("api.example.test"), reaching: ServerName("10.0.2.2")).leaf.serialNumber
            == (try authority.leaf(for: ServerName("api.example.test")).leaf.serialNumber))
    }
}
