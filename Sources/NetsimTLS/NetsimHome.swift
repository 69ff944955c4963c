import Foundation

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
            throw TLSSetupError.cannotWrite(directory.path, reason: error.localizedDescription)
        }
    }
}
