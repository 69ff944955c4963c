import ArgumentParser
import Foundation

/// Checks, before anything runs, that the file an option names can be written: a run whose
/// `--json` or `--junit` cannot be saved should fail at once with the reason, not after minutes
/// of running, and not with Foundation's "You don't have permission" for a missing folder.
enum OutputFile {
    /// Throws a usage error naming `option` if `path` (nil: not asked for; `-`: standard output)
    /// is a directory, or is missing and its folder is missing or not writable.
    static func check(_ path: String?, option: String) throws {
        guard let path, path != "-" else { return }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            if isDirectory.boolValue { throw ValidationError("\(option) \(path): is a directory; give a file name") }
            if access(path, W_OK) != 0 { throw ValidationError("\(option) \(path): \(reason(errno))") }
            return
        }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ValidationError("\(option) \(path): there is no folder \(folder) to write it in")
        }
        if access(folder, W_OK) != 0 { throw ValidationError("\(option) \(path): cannot create it in \(folder): \(reason(errno))") }
    }

    private static func reason(_ code: Int32) -> String { String(cString: strerror(code)) }
}

extension Error {
    /// The operating system's reason (`No such file or directory`) when Foundation wraps one,
    /// otherwise the error's own description.
    var posixReason: String {
        let error = self as NSError
        if error.domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32(error.code))) }
        if let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(underlying.code)))
        }
        return error.localizedDescription
    }
}
