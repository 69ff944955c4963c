import Crypto
import Foundation
import X509
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reading and writing the CA's two files, under a lock so concurrent first runs agree.
enum CAFiles {
    static func read(certificate certificatePath: URL, key keyPath: URL) throws -> CertificateAuthority {
        let certificateText = try text(at: certificatePath)
        let keyText = try text(at: keyPath)
        let certificate: Certificate
        do { certificate = try Certificate(pemEncoded: certificateText) } catch {
            throw TLSSetupError.notPEM(certificatePath.path, expected: "a PEM certificate")
        }
        let key: P256.Signing.PrivateKey
        do { key = try P256.Signing.PrivateKey(pemRepresentation: keyText) } catch {
            throw TLSSetupError.notPEM(keyPath.path, expected: "a PEM P-256 private key")
        }
        guard Certificate.PublicKey(key.publicKey) == certificate.publicKey else {
            throw TLSSetupError.keyMismatch(certificate: certificatePath.path, key: keyPath.path)
        }
        // Last, once both files are what they should be. As ssh with a private key others can
        // read: refused, not used (whoever reads it can impersonate every site to every client
        // that trusts netsim's CA).
        var info = stat()
        if stat(keyPath.path, &info) == 0, info.st_mode & 0o077 != 0 {
            let mode = String(info.st_mode & 0o777, radix: 8)
            throw TLSSetupError.unusable(keyPath.path, reason: "others can read or write it (mode 0\(mode)); the CA key must be mode 0600: chmod 600 \(keyPath.path)")
        }
        return CertificateAuthority(certificate: certificate, privateKey: key, certificatePath: certificatePath)
    }

    /// Writes the key first with mode 0600 from its creation (never readable by others, not even
    /// for an instant), then the certificate; each through a temporary file and a rename.
    static func write(certificate: Certificate, key: P256.Signing.PrivateKey, home: NetsimHome) throws {
        try atomicWrite(Array(key.pemRepresentation.utf8) + [0x0A], to: home.caKey, mode: 0o600)
        try atomicWrite(Array((try certificate.serializeAsPEM().pemString + "\n").utf8), to: home.caCertificate, mode: 0o644)
    }

    static func creationStamp(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter.string(from: date)
    }

    static func withLock<T>(_ lockFile: URL, _ body: () throws -> T) throws -> T {
        let fd = open(lockFile.path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw TLSSetupError.cannotWrite(lockFile.path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw TLSSetupError.cannotWrite(lockFile.path, reason: String(cString: strerror(errno))) }
        }
        defer { flock(fd, LOCK_UN) }
        return try body()
    }

    private static func text(at url: URL) throws -> String {
        do { return try String(contentsOf: url, encoding: .utf8) } catch {
            throw TLSSetupError.cannotRead(url.path, reason: (error as NSError).localizedDescription)
        }
    }

    private static func atomicWrite(_ bytes: [UInt8], to url: URL, mode: mode_t) throws {
        let temporary = url.path + ".tmp-\(getpid())"
        let fd = open(temporary, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw TLSSetupError.cannotWrite(temporary, reason: String(cString: strerror(errno))) }
        _ = fchmod(fd, mode)   // the umask may have taken bits away; never adds any beyond `mode`
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        var failure: String?
        do { try handle.write(contentsOf: bytes) } catch { failure = (error as NSError).localizedDescription }
        try? handle.close()
        if let failure {
            unlink(temporary)
            throw TLSSetupError.cannotWrite(url.path, reason: failure)
        }
        guard rename(temporary, url.path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw TLSSetupError.cannotWrite(url.path, reason: reason)
        }
    }
}
