import Foundation
import NetsimTLS
import Testing

/// The directory netsim's CA lives in: read where netsim may not write.
@Suite struct CAHomeTests {
    let home = TemporaryHome()

    var lockFile: String { home.home.directory.appendingPathComponent(".ca.lock").path }

    /// QA 62: a read-only `NETSIM_HOME` holding a good CA failed with "cannot write …/.ca.lock:
    /// Permission denied" unless the lock file was there already. Tests may run as root, whom
    /// mode 0555 does not stop: so the test also holds that reading opened no lock at all — the
    /// lock file, removed, is not made again.
    @Test func aCompleteCAIsReadWithoutTheLockFromAHomeNetsimCannotWrite() throws {
        let made = try CertificateAuthority.load(from: home.home)
        try FileManager.default.removeItem(atPath: lockFile)
        #expect(chmod(home.home.directory.path, 0o555) == 0)
        defer { chmod(home.home.directory.path, 0o700) }
        let read = try CertificateAuthority.load(from: home.home)
        #expect(try read.fingerprintSHA256 == made.fingerprintSHA256)
        #expect(!FileManager.default.fileExists(atPath: lockFile))
    }

    /// Making one still holds the lock (concurrent first runs agree on one CA).
    @Test func makingACAHoldsTheLock() throws {
        _ = try CertificateAuthority.load(from: home.home)
        #expect(FileManager.default.fileExists(atPath: lockFile))
    }
}
