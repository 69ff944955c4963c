import Foundation
import NetsimTLS
import Testing

/// netsim's CA is used only while it is valid, and the leaves it issues end with it at the latest
/// (QA 62: a CA that had expired the day before was used, and every client's TLS then failed).
@Suite struct CAValidityTests {
    let home = TemporaryHome()
    static let day: TimeInterval = 86400
    /// netsim's CA is valid 10 × 365 days from its making, starting an hour back.
    static let caDays: TimeInterval = 3650

    static func utc(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter.string(from: date) + " UTC"
    }

    @Test func aCAThatExpiredYesterdayIsRefusedWithTheWayOut() throws {
        let made = try CertificateAuthority.load(from: home.home, now: Date() - (Self.caDays + 1) * Self.day)
        let end = made.certificate.notValidAfter
        #expect(end < Date() && end > Date() - 2 * Self.day)
        #expect(throws: TLSSetupError.authorityExpired(home.home.directory.path, on: end)) {
            try CertificateAuthority.load(from: home.home)
        }
        #expect("\(TLSSetupError.authorityExpired(home.home.directory.path, on: end))"
            == "netsim's CA in \(home.home.directory.path) expired on \(Self.utc(end)); make a new one with `netsim ca --regenerate` (clients must trust the new one again)")
        // The way out works.
        let new = try CertificateAuthority.load(from: home.home, regenerate: true)
        #expect(new.certificate.notValidAfter > Date() + (Self.caDays - 1) * Self.day)
    }

    @Test func aCAThatStartsTomorrowIsRefused() throws {
        let made = try CertificateAuthority.load(from: home.home, now: Date() + 2 * Self.day)
        let start = made.certificate.notValidBefore
        #expect(throws: TLSSetupError.authorityNotYetValid(home.home.directory.path, from: start)) {
            try CertificateAuthority.load(from: home.home)
        }
        #expect("\(TLSSetupError.authorityNotYetValid(home.home.directory.path, from: start))"
            == "netsim's CA in \(home.home.directory.path) is valid only from \(Self.utc(start)) on: this machine's clock is behind it, or it was made where the clock was ahead; set the clock right, or make a new one with `netsim ca --regenerate` (clients must trust the new one again)")
    }

    /// A CA in its last week issues leaves that end with it, keeps the one it has (a new one
    /// could not end later), says so, and issues none once it has ended.
    @Test func leavesNeverOutliveTheCA() throws {
        let now = Date()
        let authority = try CertificateAuthority.ephemeral(now: now - (Self.caDays - 3.5) * Self.day)
        let end = authority.certificate.notValidAfter
        let leaf = try authority.leaf(for: ServerName("api.example.test"), now: now)
        #expect(leaf.leaf.notValidAfter == end)
        let later = try authority.leaf(for: ServerName("api.example.test"), now: now + 3 * Self.day)
        #expect(later.leaf.serialNumber == leaf.leaf.serialNumber)
        #expect(authority.expiryNote(now: now) == "netsim's CA in memory ends on \(Self.utc(end)), in 3 days: the leaves it issues end with it, and clients refuse them after; make a new one with `netsim ca --regenerate` (clients must trust the new one again)")
        #expect(throws: TLSSetupError.authorityExpired("memory", on: end)) {
            try authority.leaf(for: ServerName("api.example.test"), now: end + 1)
        }
        // A CA with years left issues 7-day leaves and has nothing to say.
        let young = try CertificateAuthority.ephemeral(now: now)
        // (Certificates keep whole seconds.)
        #expect(abs(try young.leaf(for: nil, now: now).leaf.notValidAfter.timeIntervalSince(now + 7 * Self.day)) < 1)
        #expect(young.expiryNote(now: now) == nil)
    }
}
