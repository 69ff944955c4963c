import Foundation
import NetsimTLS

/// A `NETSIM_HOME` of the test's own, removed when the test ends.
final class TemporaryHome: @unchecked Sendable {
    let root: URL
    let home: NetsimHome

    init() {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-tls-\(UUID().uuidString)")
        home = NetsimHome(directory: root.appendingPathComponent("home"))
    }

    deinit { try? FileManager.default.removeItem(at: root) }

    func mode(of url: URL) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    /// Folders it makes are the owner's alone (0700), whatever the umask: netsim refuses a home
    /// others can write in.
    func write(_ text: String, to url: URL) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        try text.write(to: url, atomically: true, encoding: .utf8)
    }

    /// Writes a file under the test's directory and returns its path.
    func file(_ name: String, _ text: String) throws -> String {
        let url = root.appendingPathComponent(name)
        try write(text, to: url)
        return url.path
    }
}
