import Foundation
import NetsimTLS
import Testing

/// The directory netsim's CA lives in: read where netsim may not write, refused where others may.
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

    /// QA 62: `mkdir -m 777 h; NETSIM_HOME=h netsim ca` made the CA key there without a word. As
    /// ssh refuses a `~/.ssh` others can write to: refused, nothing made, the fix named. (The
    /// mode is read, not tried, so the test holds as root too.)
    @Test(arguments: [0o777, 0o770, 0o1777])
    func aHomeOthersCanWriteInIsRefused(mode: Int) throws {
        let directory = home.home.directory.path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        #expect(chmod(directory, mode_t(mode)) == 0)
        #expect(throws: TLSSetupError.unusable(directory, reason: "its group or others can write in it (mode \(String(format: "%04o", mode))), and could put a CA of their own in netsim's place; as ssh does for ~/.ssh, netsim keeps its CA only where no one else can write: chmod 700 \(directory)")) {
            try CertificateAuthority.load(from: home.home)
        }
        #expect(!FileManager.default.fileExists(atPath: home.home.caKey.path))
        #expect(chmod(directory, 0o700) == 0)
        _ = try CertificateAuthority.load(from: home.home)
    }

    /// Only root can give a folder to another user.
    @Test(.enabled(if: geteuid() == 0, "making a folder another user owns takes root"))
    func aHomeAnotherUserOwnsIsRefused() throws {
        let directory = home.home.directory.path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        #expect(chown(directory, 65534, 65534) == 0)
        #expect(throws: TLSSetupError.unusable(directory, reason: "it belongs to another user (uid 65534), who could put a CA of their own in netsim's place; keep netsim's CA in a directory of your own (NETSIM_HOME, by default ~/.netsim)")) {
            try CertificateAuthority.load(from: home.home)
        }
        #expect(!FileManager.default.fileExists(atPath: home.home.caKey.path))
    }

    /// A symlinked key is followed, as ssh follows one, and its target's mode is what counts.
    @Test func aSymlinkedKeyIsFollowedAndItsTargetsModeChecked() throws {
        let made = try CertificateAuthority.load(from: home.home)
        let target = home.root.appendingPathComponent("elsewhere-key.pem").path
        try FileManager.default.moveItem(atPath: home.home.caKey.path, toPath: target)
        try FileManager.default.createSymbolicLink(atPath: home.home.caKey.path, withDestinationPath: target)
        #expect(try CertificateAuthority.load(from: home.home).fingerprintSHA256 == made.fingerprintSHA256)
        #expect(chmod(target, 0o644) == 0)
        #expect(throws: TLSSetupError.unusable(home.home.caKey.path, reason: "others can read or write it (mode 0644); the CA key must be mode 0600: chmod 600 \(home.home.caKey.path)")) {
            try CertificateAuthority.load(from: home.home)
        }
    }
}
