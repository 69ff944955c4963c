import Foundation
import NetsimLoopback
import NetsimTLS
import Testing

/// OpenSSL's own verifier, in strict mode, takes netsim's leaves as a normal server chain for
/// the names they were minted for — and refuses them for any other name.
@Suite struct LeafVerificationTests {
    let files = TemporaryHome()

    @Test(arguments: [
        (["-verify_hostname", "api.example.test"], true),
        (["-verify_hostname", "localhost"], true),
        (["-verify_ip", "127.0.0.1"], true),
        (["-verify_ip", "::1"], true),
        (["-verify_hostname", "other.example.test"], false),
        (["-verify_ip", "10.0.0.1"], false),
    ])
    func opensslVerifiesTheLeafForItsNamesOnly(check: [String], accepted: Bool) async throws {
        let authority = try CertificateAuthority.ephemeral()
        let leaf = try authority.leaf(for: ServerName("api.example.test"))
        let caFile = try files.file("ca.pem", try authority.pem)
        let leafFile = try files.file("leaf.pem", try leaf.leaf.serializeAsPEM().pemString + "\n")
        let openssl = try WatchedProcess(URL(fileURLWithPath: "/usr/bin/openssl"),
                                         ["verify", "-x509_strict", "-purpose", "sslserver", "-CAfile", caFile] + check + [leafFile])
        let result = try await openssl.result(within: .seconds(20))
        #expect((result.status == 0) == accepted, "openssl verify \(check): \(result.standardOutput)\(result.standardError)")
        if accepted { #expect(result.standardOutput.contains("OK")) }
    }

    @Test func anExpiredLeafIsRefused() async throws {
        let authority = try CertificateAuthority.ephemeral()
        let now = Date()
        let leaf = try authority.issue(names: ServerName.loopback, notBefore: now - 10 * 86400, notAfter: now - 86400)
        let caFile = try files.file("ca.pem", try authority.pem)
        let leafFile = try files.file("leaf.pem", try leaf.leaf.serializeAsPEM().pemString + "\n")
        let result = try await WatchedProcess(URL(fileURLWithPath: "/usr/bin/openssl"), ["verify", "-CAfile", caFile, leafFile])
            .result(within: .seconds(20))
        #expect(result.status != 0)
        #expect((result.standardOutput + result.standardError).contains("expired"))
    }
}
