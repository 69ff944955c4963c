import Foundation

/// Copies of files in a fresh directory under /tmp that every user may search and read, for a
/// test that runs a program as another user (`setpriv --reuid=nobody`).
///
/// Why: a checkout often lives below a directory only its owner may enter (a root home is
/// 0700), and there `nobody` cannot even start the built executable; run from a copy here,
/// the test does not depend on where the checkout is. The directory and its copies are
/// removed by ``remove()``.
public struct SharedCopy: Sendable {
    /// The directory (mode 0755).
    public let directory: URL

    /// Copies each of `files` into a new directory, keeping their names; executables stay
    /// executable by everyone, other files become readable by everyone.
    public init(_ files: [URL]) throws {
        // /tmp itself, not $TMPDIR: that may be private to its user, as the checkout may be.
        let base = URL(fileURLWithPath: "/tmp").appendingPathComponent("netsim-shared-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
        directory = base
        do {
            for file in files {
                let copy = base.appendingPathComponent(file.lastPathComponent)
                try FileManager.default.copyItem(at: file, to: copy)
                let executable = FileManager.default.isExecutableFile(atPath: file.path)
                try FileManager.default.setAttributes([.posixPermissions: executable ? 0o755 : 0o644], ofItemAtPath: copy.path)
            }
        } catch {
            remove()
            throw error
        }
    }

    /// The copy of the file named `name`.
    public func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// Removes the directory and every copy in it.
    public func remove() { try? FileManager.default.removeItem(at: directory) }
}
