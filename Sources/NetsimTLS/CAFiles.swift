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
    /// The CA in `home`, made there if it has none (or replaced, with `regenerate`).
    ///
    /// A CA whose two files are both there is read without the lock: reading needs no write
    /// access. QA 62: a read-only `NETSIM_HOME` holding a good CA failed with "cannot write
    /// …/.ca.lock: Permission denied" unless the lock file happened to exist. The lock is for
    /// making a CA, so that concurrent first runs agree on one. Files are replaced by rename, key
    /// first, so a reader sees whole files; one that meets a `--regenerate` between its two
    /// renames (the new key, the old certificate) reads again under the lock, once it is done.
    static func readOrCreate(in home: NetsimHome, regenerate: Bool, now: Date) throws -> CertificateAuthority {
        var mismatch: TLSSetupError?
        if !regenerate, home.holdsCA {
            do { return try read(certificate: home.caCertificate, key: home.caKey) } catch let error as TLSSetupError {
                guard case .keyMismatch = error else { throw error }
                mismatch = error
            }
        }
        do {
            return try withLock(home.lockFile) {
                let manager = FileManager.default
                let exists = manager.fileExists(atPath: home.caCertificate.path) || manager.fileExists(atPath: home.caKey.path)
                if exists && !regenerate {
                    return try read(certificate: home.caCertificate, key: home.caKey)
                }
                let (certificate, key) = try CertificateMinter.authority(commonName: "netsim CA \(creationStamp(now))", now: now)
                try write(certificate: certificate, key: key, home: home)
                return CertificateAuthority(certificate: certificate, privateKey: key, certificatePath: home.caCertificate, keyMode: keyMode)
            }
        } catch TLSSetupError.cannotWrite(let path, _) where path == home.lockFile.path && mismatch != nil {
            throw mismatch!  // a home netsim cannot write: the pair itself is what is wrong
        }
    }

    static func read(certificate certificatePath: URL, key keyPath: URL) throws -> CertificateAuthority {
        let certificateText = try text(at: certificatePath, beside: keyPath, expected: "netsim's CA certificate")
        let keyText = try text(at: keyPath, beside: certificatePath, expected: "netsim's CA key")
        let certificate = try parse(certificateText, at: certificatePath, expected: "a PEM certificate") {
            try Certificate(pemEncoded: $0)
        }
        // A CA of another kind (mitmproxy's RSA one, a company's) is a CA, not a damaged file:
        // `--regenerate` would replace what devices trust, so both ways out are said (QA 65).
        if P256.Signing.PublicKey(certificate.publicKey) == nil {
            // swift-certificates says RSA2048.PublicKey, P384.PublicKey, Ed25519.PublicKey.
            var kind = certificate.publicKey.description.replacingOccurrences(of: ".PublicKey", with: "")
            if kind.hasPrefix("RSA"), let bits = Int(kind.dropFirst(3)) { kind = "RSA (\(bits) bits)" }
            if kind.hasPrefix("P"), Int(kind.dropFirst()) != nil { kind = "ECDSA " + kind.prefix(1) + "-" + kind.dropFirst() }
            throw TLSSetupError.unusable(certificatePath.path, reason: "its key is \(kind), and netsim's CA signs with a P-256 ECDSA key only; "
                + "to keep this CA as it is, point NETSIM_HOME at another folder; or \(TLSSetupError.regenerate)")
        }
        guard case .isCertificateAuthority? = try? certificate.extensions.basicConstraints else {
            throw TLSSetupError.unusable(certificatePath.path, reason: "it is not a CA certificate (its basicConstraints do not say CA:TRUE), "
                + "so clients would refuse every certificate netsim signs with it; \(TLSSetupError.regenerate)")
        }
        if keyText.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") || keyText.contains("Proc-Type: 4,ENCRYPTED") {
            throw TLSSetupError.unusable(keyPath.path, reason: "it is encrypted with a passphrase, which netsim does not ask for; decrypt it "
                + "(umask 077; openssl pkey -in \(keyPath.path) -out \(keyPath.path).plain && mv \(keyPath.path).plain \(keyPath.path)), or \(TLSSetupError.regenerate)")
        }
        let key = try parse(keyText, at: keyPath, expected: "a PEM P-256 private key") {
            try P256.Signing.PrivateKey(pemRepresentation: $0)
        }
        guard Certificate.PublicKey(key.publicKey) == certificate.publicKey else {
            throw TLSSetupError.keyMismatch(certificate: certificatePath.path, key: keyPath.path)
        }
        // Last, once both files are what they should be. As ssh with a private key others can
        // read: refused, not used (whoever reads it can impersonate every site to every client
        // that trusts netsim's CA).
        var info = stat()
        guard stat(keyPath.path, &info) == 0 else {
            throw TLSSetupError.cannotRead(keyPath.path, reason: String(cString: strerror(errno)))
        }
        let mode = Int(info.st_mode & 0o777)
        if mode & 0o077 != 0 {
            throw TLSSetupError.unusable(keyPath.path, reason: "others can read or write it (mode \(modeText(mode))); the CA key must be mode 0600: chmod 600 \(keyPath.path)")
        }
        return CertificateAuthority(certificate: certificate, privateKey: key, certificatePath: certificatePath, keyMode: mode)
    }

    /// Permission bits as `ls -l` users and chmod write them: `0600`.
    static func modeText(_ mode: Int) -> String {
        String(format: "%04o", mode)
    }

    /// The mode the key is written with.
    static let keyMode = 0o600

    /// Writes the key first with mode 0600 from its creation (never readable by others, not even
    /// for an instant), then the certificate; each through a temporary file and a rename.
    static func write(certificate: Certificate, key: P256.Signing.PrivateKey, home: NetsimHome) throws {
        try atomicWrite(Array(key.pemRepresentation.utf8) + [0x0A], to: home.caKey, mode: mode_t(keyMode))
        try atomicWrite(Array((try certificate.serializeAsPEM().pemString + "\n").utf8), to: home.caCertificate, mode: 0o644)
    }

    static func creationStamp(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter.string(from: date)
    }

    /// A moment as messages show it: `2036-11-20 14:34:55 UTC`.
    static func utcText(_ date: Date) -> String {
        creationStamp(date) + " UTC"
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

    /// A CA file's text. What is wrong with it is said in the terms of the CA (QA 62): a file
    /// missing beside the other, a directory in a file's place.
    private static func text(at url: URL, beside partner: URL, expected: String) throws -> String {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { throw TLSSetupError.missing(url.path, beside: partner.path) }
            throw TLSSetupError.cannotRead(url.path, reason: String(cString: strerror(errno)))
        }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        var info = stat()
        if fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
            throw TLSSetupError.isADirectory(url.path, expected: expected)
        }
        let data: Data
        do { data = try handle.readToEnd() ?? Data() } catch {
            throw TLSSetupError.cannotRead(url.path, reason: (error as NSError).localizedDescription)
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// `parse`'s value, or the error that says how the file is wrong: not PEM at all, or PEM
    /// that stops short or was altered.
    private static func parse<Value>(_ text: String, at url: URL, expected: String, _ parse: (String) throws -> Value) throws -> Value {
        do { return try parse(text) } catch {
            if text.drop(while: \.isWhitespace).hasPrefix("-----BEGIN") { throw TLSSetupError.damaged(url.path, expected: expected) }
            throw TLSSetupError.notPEM(url.path, expected: expected)
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
