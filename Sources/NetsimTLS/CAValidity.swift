import Foundation

/// netsim's CA is used only while it is valid, and no leaf it issues outlives it.
///
/// QA 62: a CA in `$NETSIM_HOME` that had expired the day before was loaded as any other —
/// `netsim ca` showed it and exited 0, and every client of `netsim run` over TLS then failed with
/// CERTIFICATE_VERIFY_FAILED, which blamed the client. Leaves were valid 7 days from their
/// minting whatever the CA's own end, so a CA in its last week issued leaves that outlived it.
extension CertificateAuthority {
    /// Throws when `now` is outside the CA's validity, saying what to do.
    func refuseOutsideValidity(now: Date) throws {
        if now >= certificate.notValidAfter {
            throw TLSSetupError.authorityExpired(place, on: certificate.notValidAfter)
        }
        if now < certificate.notValidBefore {
            throw TLSSetupError.authorityNotYetValid(place, from: certificate.notValidBefore)
        }
    }

    /// When a leaf minted at `now` ends: its lifetime, but never after the CA's own end (a
    /// client then refuses the chain anyway: a leaf that says otherwise misleads whoever reads
    /// it). Throws once the CA has ended: no leaf it issues would verify.
    func leafEnd(from now: Date) throws -> Date {
        try refuseOutsideValidity(now: now)
        return min(now + CertificateMinter.leafLifetime, certificate.notValidAfter)
    }

    /// A note when the CA ends within a leaf's lifetime (its leaves end with it, and every client
    /// refuses them after); nil otherwise. `netsim ca`, `netsim relay` and `netsim proxy` show it.
    public func expiryNote(now: Date = Date()) -> String? {
        let left = certificate.notValidAfter.timeIntervalSince(now)
        guard left > 0, left < CertificateMinter.leafLifetime else { return nil }
        let days = Int(left / 86400)
        let when = days == 0 ? "in less than a day" : days == 1 ? "in 1 day" : "in \(days) days"
        return "netsim's CA in \(place) ends on \(CAFiles.utcText(certificate.notValidAfter)), \(when): the leaves it issues end with it, "
            + "and clients refuse them after; make a new one with `netsim ca --regenerate` (clients must trust the new one again)"
    }

    /// Where the CA is, as its messages name it.
    var place: String {
        certificatePath?.deletingLastPathComponent().path ?? "memory"
    }
}
