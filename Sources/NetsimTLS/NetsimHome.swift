import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where netsim keeps what outlives a run: its certificate authority.
///
/// `$NETSIM_HOME` when set, `~/.netsim/` otherwise. Made on first use with mode 0700, because it
/// holds a private key that every client that trusts netsim's CA trusts.
public struct NetsimHome: Sendable, Equatable {
    public let directory: URL

    public init(directory: URL) { self.directory = directory }

    /// The home the environment names (`NETSIM_HOME`), else `~/.netsim`.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> NetsimHome {
        if let path = environment["NETSIM_HOME"], !path.isEmpty {
            return NetsimHome(directory: URL(fileURLWithPath: path, isDirectory: true))
        }
        let home = environment["HOME"].map { URL(fileURLWithPath: $0, isDirectory: true) }
            ?? FileManager.default.homeDirectoryForCurrentUser
        return NetsimHome(directory: home.appendingPathComponent(".netsim", isDirectory: true))
    }

    public var caCertificate: URL { directory.appendingPathComponent("ca.pem") }
    public var caKey: URL { directory.appendingPathComponent("ca-key.pem") }
    var lockFile: URL { directory.appendingPathComponent(".ca.lock") }

    /// Both of the CA's files are there (whatever they hold).
    var holdsCA: Bool {
        FileManager.default.fileExists(atPath: caCertificate.path) && FileManager.default.fileExists(atPath: caKey.path)
    }

    /// Refuses a home someone else could change, as ssh refuses a `~/.ssh` others can write to:
    /// one writable by its group or others (a `mkdir -m 777`, `/tmp`), or owned by another user
    /// than this one or root. Whoever can write in it can put a CA of their own in netsim's place,
    /// which the next `netsim ca --pem` hands to devices to trust. QA 62: such a home was used
    /// without a word, and the CA key made in it.
    ///
    /// The files in it are what they are: a symlinked `ca-key.pem` is followed (as ssh follows a
    /// symlinked key), its target's mode checked as any key's; the link itself can only be
    /// changed by whoever can write here.
    func refuseOthersWriting() throws {
        var info = stat()
        guard stat(directory.path, &info) == 0 else {
            throw TLSSetupError.cannotRead(directory.path, reason: String(cString: strerror(errno)))
        }
        if info.st_uid != geteuid() && info.st_uid != 0 {
            throw TLSSetupError.unusable(directory.path, reason: "it belongs to another user (uid \(info.st_uid)), who could put a CA of their own in netsim's place; keep netsim's CA in a directory of your own (NETSIM_HOME, by default ~/.netsim)")
        }
        let mode = Int(info.st_mode & 0o7777)
        if mode & 0o022 != 0 {
            throw TLSSetupError.unusable(directory.path, reason: "its group or others can write in it (mode \(CAFiles.modeText(mode))), and could put a CA of their own in netsim's place; as ssh does for ~/.ssh, netsim keeps its CA only where no one else can write: chmod 700 \(directory.path)")
        }
    }

    /// Makes the directory (0700) if it is missing.
    func ensureExists() throws {
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        if manager.fileExists(atPath: directory.path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw TLSSetupError.notADirectory(directory.path) }
            return
        }
        do {
            try manager.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw TLSSetupError.cannotWrite(directory.path, reason: Self.whyNotMade(directory, error))
        }
    }

    /// Why a directory could not be made, in words (QA 65: "NSCocoaErrorDomain error 512" for a
    /// path under a regular file): the nearest part of the path that exists and is no directory,
    /// or the system's reason.
    static func whyNotMade(_ directory: URL, _ error: any Error) -> String {
        var part = directory.deletingLastPathComponent()
        var isDirectory: ObjCBool = false
        while part.path != "/" && !FileManager.default.fileExists(atPath: part.path, isDirectory: &isDirectory) {
            part = part.deletingLastPathComponent()
        }
        if FileManager.default.fileExists(atPath: part.path, isDirectory: &isDirectory), !isDirectory.boolValue {
            return "\(part.path) is a file, not a directory"
        }
        if let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(underlying.code)))
        }
        if access(part.path, W_OK) != 0 { return "\(part.path) is not writable by this user" }
        return error.localizedDescription
    }
}
