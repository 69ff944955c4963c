import Foundation
import NetsimCore
import NetsimTLS
import Testing

/// A client without SNI (one that connects to an IP address) is answered from the same renewing
/// cache as one that names its server. QA 62: its leaf was minted once, with the configuration,
/// so a relay running past its 7 days presented an expired certificate to every such client.
@Suite struct NoSNILeafTests {
    static let day: TimeInterval = 86400

    @Test func aLongRunningServerPresentsACurrentLeafWithoutSNI() async throws {
        let clock = TestClock()
        let authority = try CertificateAuthority.ephemeral(clock: { clock.now })
        let server = try await PresentedLeaf(try authority.serverConfiguration())
        let first = try await server.leafWithoutSNI()
        #expect(first.notValidAfter > clock.now + 6 * Self.day)
        // Kept while it has more than a day left…
        clock.advance(by: 5 * Self.day)
        #expect(try await server.leafWithoutSNI().serialNumber == first.serialNumber)
        // …replaced a day before it ends, by the same context.
        clock.advance(by: 1.5 * Self.day)
        let renewed = try await server.leafWithoutSNI()
        await server.close()
        #expect(renewed.serialNumber != first.serialNumber)
        #expect(renewed.notValidAfter > clock.now + 6 * Self.day)
    }

    /// `bad-cert` certificates are made per handshake, without SNI too: a `wrong-host` one a week
    /// on is wrong for its name only, not also for its date.
    @Test(arguments: [BadCertificateKind.selfSigned, .wrongHost, .untrusted])
    func aBadCertificateWithoutSNIIsCurrentAWeekOn(kind: BadCertificateKind) async throws {
        let clock = TestClock()
        let authority = try CertificateAuthority.ephemeral(clock: { clock.now })
        let server = try await PresentedLeaf(try authority.badServerConfiguration(kind))
        clock.advance(by: 8 * Self.day)
        let presented = try await server.leafWithoutSNI()
        await server.close()
        #expect(presented.notValidBefore < clock.now && presented.notValidAfter > clock.now)
    }
}
